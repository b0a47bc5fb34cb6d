"""What the benchmark reports (benches/*_report.py, benches/report.py) share: the section of
BENCHMARKS.md each one owns, between its markers, the prices they cost with, and the way they
print a percentile, a ratio and a number.

Imported by name: each report runs as `python3 benches/<report>.py`, which puts benches/ first on
the module path.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def prices():
    """benches/lambda-prices.json: Lambda, DynamoDB and instance prices, with where each was read."""
    with open(os.path.join(HERE, "lambda-prices.json")) as f:
        return json.load(f)


def records(path):
    """A benchmark run's results file: one JSON record a line."""
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def run_header(results_path, machine, end, measured):
    """The sentence that opens a Lambda report: the run, its size (`measured` says what was
    invoked, and how often), the machine and its load at both ends."""
    run = os.path.basename(os.path.dirname(results_path))
    return (
        f"Run `{run}` ({machine['mode']}, {machine['profile']} builds, commit {machine['commit']}): "
        f"{machine['inits']} starts of each function, {machine['rounds']} round(s) × "
        f"{machine['batch']} {measured}. Machine: {machine['cpu']}, {machine['cores']} cores, "
        f"Linux {machine['kernel']}, {machine['rustc']}; load average "
        f"{' '.join(machine['loadavg_start'])} at the start, {end.get('loadavg_end', '?')} at the "
        "end (shared with other builds)."
    )


def pct(values, p):
    """The p-quantile (0..1) of values, nearest rank."""
    s = sorted(values)
    return s[round((len(s) - 1) * p)]


def ratio(a, b):
    """a ÷ b as "1.23×", or "—" when b is zero."""
    return f"{a / b:.2f}×" if b else "—"


def fmt(x, digits=2):
    return f"{x:,.{digits}f}"


def write_section(path, name, text):
    """Replaces what lies between `<!-- NAME:begin -->` and `<!-- NAME:end -->` in the file at
    path with text; exits naming the file and the markers if it has none."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    with open(path) as f:
        doc = f.read()
    if begin not in doc or end not in doc:
        sys.exit(f"{path}: no {begin} … {end} markers; put them where the section belongs")
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(path, "w") as f:
        f.write(f"{head}{begin}\n{text.rstrip(chr(10))}\n{end}{tail}")
