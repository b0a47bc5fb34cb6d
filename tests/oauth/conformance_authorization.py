"""The official conformance suite's `authorization` command against mcp-lambda's built-in
authorization server, with this script as the person at the browser.

The basket is the authorization server (MCP_OAUTH_UPSTREAM_ISSUER) in front of oidc-provider
with registration off, as test_builtin_as.py runs it, with one configured public client,
`conformance`, whose loopback redirect URI allows any port (MCP_OAUTH_CLIENTS; the suite does
not register, it takes `--client-id`). The suite runs its scenarios in one process: it reads the
metadata, then prints an authorization URL for `http://127.0.0.1:<port>/callback` and waits
there. This script follows that URL through the consent page and the upstream's login forms
(`oauth_support.sign_in`) and loads the final redirect, so the suite's own listener receives the
query exactly as the server sent it, then scores each scenario from the suite's `checks.json`.

Run by scripts/conformance-auth.sh, which installs what it needs and sets CONFORMANCE_NODE,
CONFORMANCE_SUITE, OAUTH_NODE, OAUTH_NODE_DIR, BASKET_BIN and OAUTH_LOGS (the results folder):

    python conformance_authorization.py SCENARIO...

Every SCENARIO named, and every one the suite lists, is scored: it passes when its checks came
back and none is FAILURE or SKIPPED (a WARNING is printed, not counted, as the suite counts it).
The last line is `conformance-auth: N passed, M failed`; the exit status is non-zero if any
failed.
"""

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import oauth_support as s

CLIENT_ID = "conformance"
SUITE_DIR = Path(__file__).resolve().parents[2] / ".conformance"
# Long enough for a debug build's first requests; the suite itself waits five minutes.
STEP_SECS = 30


def suite_command(*args: str) -> list[str]:
    return [os.environ["CONFORMANCE_NODE"], os.environ["CONFORMANCE_SUITE"], *args]


def listed_scenarios() -> list[str]:
    """What the suite lists under `list --authorization`."""
    out = subprocess.run(suite_command("list", "--authorization"), cwd=SUITE_DIR,
                         capture_output=True, text=True, timeout=STEP_SECS).stdout
    return re.findall(r"^  - (\S+)", out, re.M)


class Suite:
    """The suite's `authorization` run, its output copied to `suite.log` and read line by line."""

    def __init__(self, issuer: str, resource: str, port: int, results: Path):
        self.log = open(results / "suite.log", "w")
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.proc = subprocess.Popen(
            suite_command("authorization", "--url", issuer, "--client-id", CLIENT_ID,
                          "--resource", resource, "-p", str(port), "-o", str(results)),
            cwd=SUITE_DIR, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.log.write(line)
            self.log.flush()
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def authorization_url(self) -> str | None:
        """The URL the suite asks a browser to open, once its callback listener is up; None if
        the suite ended without one (its metadata scenario's checks say why)."""
        url, listening, next_is_url = None, False, False
        deadline = time.monotonic() + STEP_SECS
        while url is None or not listening:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise TimeoutError(f"the suite printed no authorization URL in {STEP_SECS} s") from None
            if line is None:
                return None
            if next_is_url:
                url, next_is_url = line.strip(), False
            next_is_url = next_is_url or line.startswith("Access the following URL")
            listening = listening or line.startswith("Callback server started")
        return url

    def close(self):
        try:
            self.proc.wait(timeout=STEP_SECS)
        except subprocess.TimeoutExpired:
            print(f"conformance-auth: the suite did not end within {STEP_SECS} s; stopped")
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def run(results: Path):
    with s.upstream() as upstream_issuer:
        # oauth_support.basket's default MCP_AUTH_ISSUER; unset below (the basket is the issuer).
        os.environ["OAUTH_ISSUER"] = upstream_issuer
        with s.basket(
            MCP_AUTH_ISSUER=None,
            MCP_OAUTH_UPSTREAM_ISSUER=upstream_issuer,
            MCP_OAUTH_UPSTREAM_CLIENT_ID="mcp-facade",
            MCP_OAUTH_UPSTREAM_CLIENT_SECRET="mcp-facade-secret",
            MCP_OAUTH_CLIENTS=f"{CLIENT_ID}=http://127.0.0.1/callback",
        ) as resource:
            issuer = resource.removesuffix("/mcp")
            port = s.free_port()
            suite = Suite(issuer, resource, port, results)
            try:
                url = suite.authorization_url()
                if url is not None:
                    back = s.sign_in(url, "conformance", redirect_uri=f"http://127.0.0.1:{port}/callback",
                                     deliver=True)
                    print(f"conformance-auth: the browser came back with {', '.join(sorted(back))}")
            except BaseException:
                suite.proc.kill()  # it would wait five minutes for the callback
                raise
            finally:
                suite.close()


def results_by_scenario(results: Path) -> dict[str, list[dict]]:
    """The checks of each scenario run: folders `authorization-server-<scenario>-<timestamp>`."""
    found = {}
    for folder in results.iterdir():
        m = re.fullmatch(r"authorization-server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z", folder.name)
        if m and (folder / "checks.json").is_file():
            found[m.group(1)] = json.loads((folder / "checks.json").read_text())
    return found


def main(expected: list[str]) -> int:
    results = Path(os.environ["OAUTH_LOGS"])
    scenarios = list(dict.fromkeys(expected))
    try:
        scenarios += [name for name in listed_scenarios() if name not in scenarios]
        run(results)
    except Exception as error:  # every scenario is still scored: one without results fails
        print(f"conformance-auth: the run stopped: {type(error).__name__}: {error}")
    found = results_by_scenario(results)
    passed = failed = 0
    for scenario in scenarios:
        checks = found.get(scenario)
        bad = [c for c in checks or [] if c["status"] in ("FAILURE", "SKIPPED")]
        for c in checks or []:
            if c["status"] == "WARNING":
                print(f"conformance-auth: not counted: {scenario}:{c['id']} WARNING: {c.get('errorMessage', '')}")
        if checks and not bad and any(c["status"] == "SUCCESS" for c in checks):
            passed += 1
            print(f"  ✓ {scenario}: {len(checks)} checks")
            continue
        failed += 1
        if not checks:
            print(f"  ✗ {scenario}: no results")
        for c in bad:
            message = (c.get("errorMessage") or "").split("\n")[0]
            print(f"  ✗ {scenario}:{c['id']} {c['status']}: {message}")
    if failed:
        print(f"conformance-auth: the suite's output, the server's and the upstream's logs are in {results}")
    print(f"conformance-auth: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
