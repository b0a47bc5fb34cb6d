"""The TypeScript SDK v2 client's OAuth (ts_oauth_client.mjs, run once under the Node 22 that
scripts/oauth-tests.sh installs, from $OAUTH_NODE_DIR where the client is installed) against a
basket with auth on: each of its checks is one test here."""

import os
import subprocess
from pathlib import Path

import pytest

import oauth_support as s

CHECKS = [
    "ts: the first call is refused 401, then discovery, registration, authorization and the call succeed",
    "ts: a second connection on the stored tokens calls without a new authorization",
    "ts: a read-only token gets 403 insufficient_scope on checkout, the client steps up and the call succeeds",
    "ts: the client printed no warnings",
]


@pytest.fixture(scope="module")
def ts_run():
    folder = Path(os.environ["OAUTH_NODE_DIR"])
    with s.basket() as url:
        run = subprocess.run(
            [os.environ["OAUTH_NODE"], str(folder / "ts_oauth_client.mjs"), url, s.issuer()],
            cwd=folder, capture_output=True, text=True, timeout=120,
        )
    lines = {}
    for line in run.stdout.splitlines():
        verdict, _, rest = line.partition(" ")
        if verdict in ("PASS", "FAIL"):
            name = next((c for c in CHECKS if rest == c or rest.startswith(c + " (") or rest.startswith(c + ": ")), rest)
            lines[name] = line
    return run, lines


@pytest.mark.parametrize("name", CHECKS)
def test_ts_client(ts_run, name):
    run, lines = ts_run
    line = lines.get(name)
    assert line is not None, f"the script did not report {name!r}; exit {run.returncode}\n{run.stdout}\n{run.stderr[-3000:]}"
    assert line.startswith("PASS "), line


def test_ts_script_reported_every_check(ts_run):
    run, lines = ts_run
    assert set(lines) == set(CHECKS), f"unexpected checks: {sorted(set(lines) - set(CHECKS))}\n{run.stdout}"
    assert run.returncode == (0 if all(l.startswith("PASS") for l in lines.values()) else 1), run.stderr[-3000:]
