"""The TypeScript SDK v2 client's OAuth against the built-in authorization server
(ts_builtin_client.mjs, run under the Node 22 that scripts/oauth-tests.sh installs, from
$OAUTH_NODE_DIR where the client is installed): once by dynamic registration, against a basket
as test_builtin_as.py runs it, and once by a Client ID Metadata Document, against a basket as
test_builtin_cimd.py runs it (the document served over https on loopback under the run's CA,
which only the basket trusts). Each of the script's checks is one test here.

Node runs with a clean environment (PATH and HOME): nothing such as NODE_EXTRA_CA_CERTS makes
its fetch trust the documents' CA, so the client cannot be fetching the document itself.
"""

import os
import subprocess
from pathlib import Path

import pytest

from test_builtin_as import facade_basket, server, upstream  # noqa: F401
from test_builtin_cimd import documents  # noqa: F401

MODES = ("dcr", "cimd")
CHECKS = {
    mode: [
        f"ts builtin {mode}: the first call is refused 401, then discovery, "
        f"{'registration' if mode == 'dcr' else 'the metadata document'}, consent, the upstream "
        "login and the call succeed",
        f"ts builtin {mode}: a refused access token is refreshed and the call succeeds",
        f"ts builtin {mode}: the client printed no warnings",
    ]
    for mode in MODES
}
DOCUMENT_PATH = "/ts-client.json"


@pytest.fixture(scope="module")
def cimd_server(upstream, documents):  # noqa: F811
    with facade_basket(upstream, MCP_AUTH_CA_FILE=str(documents.ca),
                       MCP_OAUTH_CIMD_ALLOW_PRIVATE_NETWORKS="true") as url:
        yield url


def run_script(*args: str):
    folder = Path(os.environ["OAUTH_NODE_DIR"])
    run = subprocess.run(
        [os.environ["OAUTH_NODE"], str(folder / "ts_builtin_client.mjs"), *args],
        cwd=folder, capture_output=True, text=True, timeout=120,
        env={"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")},
    )
    lines = {}
    checks = CHECKS[args[0]]
    for line in run.stdout.splitlines():
        verdict, _, rest = line.partition(" ")
        if verdict in ("PASS", "FAIL"):
            name = next((c for c in checks if rest == c or rest.startswith(c + " (") or rest.startswith(c + ": ")), rest)
            lines[name] = line
    return run, lines


@pytest.fixture(scope="module")
def dcr_run(server, upstream):  # noqa: F811
    return run_script("dcr", server, upstream)


@pytest.fixture(scope="module")
def cimd_run(cimd_server, upstream, documents):  # noqa: F811
    document = documents.good(DOCUMENT_PATH)
    before = documents.fetches.count(DOCUMENT_PATH)
    run = run_script("cimd", cimd_server, upstream, document)
    return (*run, documents.fetches.count(DOCUMENT_PATH) - before)


@pytest.fixture
def ts_run(request):
    return request.getfixturevalue(f"{request.node.callspec.params['mode']}_run")[:2]


@pytest.mark.parametrize("mode,name", [(m, c) for m in MODES for c in CHECKS[m]])
def test_ts_client_by_the_builtin_as(ts_run, mode, name):
    run, lines = ts_run
    line = lines.get(name)
    assert line is not None, f"the script did not report {name!r}; exit {run.returncode}\n{run.stdout}\n{run.stderr[-3000:]}"
    assert line.startswith("PASS "), line


@pytest.mark.parametrize("mode", MODES)
def test_ts_script_reported_every_check(ts_run, mode):
    run, lines = ts_run
    assert set(lines) == set(CHECKS[mode]), f"unexpected checks: {sorted(set(lines) - set(CHECKS[mode]))}\n{run.stdout}"
    assert run.returncode == (0 if all(l.startswith("PASS") for l in lines.values()) else 1), run.stderr[-3000:]


def test_the_basket_fetched_the_ts_clients_document(cimd_run):
    _, _, fetches = cimd_run
    assert fetches >= 1, "the basket never fetched the client's metadata document"
