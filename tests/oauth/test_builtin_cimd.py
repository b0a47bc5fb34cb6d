"""The built-in authorization server's Client ID Metadata Documents (CIMD): a client whose id is
the https URL of its metadata document, fetched by the server.

The documents are served here over https on loopback, under a CA made for the run (the basket
trusts it through MCP_AUTH_CA_FILE), with MCP_OAUTH_CIMD_ALLOW_PRIVATE_NETWORKS=true: loopback
is private, and without the flag the same documents are refused (one test shows it). The
Python `mcp` client logs in by CIMD from the first 401 to a tool call; then the documents a
server must refuse, each answered with an error page and never a redirect.
"""

import json
import ssl
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata

import oauth_support as s
from test_builtin_as import as_metadata, authorization_url, facade_basket, no_redirect, upstream  # noqa: F401
from test_oauth_python import Browser, structured

REDIRECT = s.REDIRECT_URI


def make_ca(folder: Path) -> tuple[Path, Path, Path]:
    """A CA and a certificate for 127.0.0.1 it signed: (ca.pem, cert.pem, key.pem)."""
    run = lambda *args: subprocess.run(args, cwd=folder, check=True, capture_output=True)  # noqa: E731
    run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=mcp-lambda test CA",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", "key.pem", "-out", "cert.csr", "-subj", "/CN=127.0.0.1")
    (folder / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n")
    run("openssl", "x509", "-req", "-in", "cert.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "cert.pem", "-days", "1", "-extfile", "ext.cnf")
    return folder / "ca.pem", folder / "cert.pem", folder / "key.pem"


class Documents:
    """An https server on loopback serving client metadata documents by path."""

    def __init__(self, folder: Path):
        self.ca, cert, key = make_ca(folder)
        self.docs: dict[str, tuple[int, dict, bytes, float]] = {}
        self.fetches: list[str] = []
        documents = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                documents.fetches.append(self.path)
                status, headers, body, delay = documents.docs.get(self.path, (404, {}, b"{}", 0))
                if delay:
                    time.sleep(delay)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.base = f"https://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"{self.base}{path}"

    def serve(self, path: str, document: dict | bytes, status: int = 200, delay: float = 0,
              headers: dict | None = None) -> str:
        body = document if isinstance(document, bytes) else json.dumps(document).encode()
        self.docs[path] = (status, {"Content-Type": "application/json", **(headers or {})}, body, delay)
        return self.url(path)

    def good(self, path: str, **extra) -> str:
        url = self.url(path)
        return self.serve(path, {
            "client_id": url, "client_name": "CIMD test client", "redirect_uris": [REDIRECT],
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
            "token_endpoint_auth_method": "none", **extra,
        })


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    docs = Documents(tmp_path_factory.mktemp("cimd"))
    yield docs
    docs.server.shutdown()


@pytest.fixture(scope="module")
def server(upstream, documents):  # noqa: F811
    with facade_basket(upstream, MCP_AUTH_CA_FILE=str(documents.ca),
                       MCP_OAUTH_CIMD_ALLOW_PRIVATE_NETWORKS="true") as url:
        yield url


def test_metadata_advertises_client_id_metadata_documents(server):
    meta = as_metadata(server)
    assert meta["client_id_metadata_document_supported"] is True
    assert "none" in meta["token_endpoint_auth_methods_supported"]


def test_python_client_logs_in_by_its_metadata_document(server, documents):
    client_url = documents.good("/python-client.json")
    storage, browser = s.MemoryStorage(), Browser("dora")
    requests = []

    async def log(response):
        requests.append((response.request.method, str(response.request.url).split("?")[0], response.status_code))

    async def run():
        provider = OAuthClientProvider(
            server_url=server,
            client_metadata=OAuthClientMetadata(
                client_name="CIMD test client", redirect_uris=[REDIRECT],
                grant_types=["authorization_code", "refresh_token"], response_types=["code"],
            ),
            storage=storage, redirect_handler=browser.redirect, callback_handler=browser.callback,
            client_metadata_url=client_url,
        )
        async with httpx2.AsyncClient(auth=provider, event_hooks={"response": [log]}, timeout=30) as http:
            async with Client(streamable_http_client(server, http_client=http), mode="auto") as client:
                return structured(await client.call_tool("create_basket", {}))

    created = anyio.run(run)
    assert isinstance(created["basket_id"], str)
    assert storage.client_info.client_id == client_url
    assert not any(u.endswith("/oauth/register") for _, u, _ in requests), requests
    assert ("POST", server, 200) in requests
    _, claims = s.jws_parts(storage.tokens.access_token)
    assert claims["client_id"] == client_url and claims["sub"] == "dora"
    assert "/python-client.json" in documents.fetches


def test_the_consent_page_names_the_documents_domain(server, documents):
    client_url = documents.good("/consent-client.json")
    _, challenge = s.pkce()
    page = httpx2.get(authorization_url(server, client_url, challenge), timeout=10)
    assert page.status_code == 200, page.text[:300]
    assert "CIMD test client" in page.text
    assert "a client metadata document on <strong>127.0.0.1</strong>" in page.text


def refused(server, client_url: str) -> httpx2.Response:
    _, challenge = s.pkce()
    started = time.monotonic()
    r = httpx2.get(authorization_url(server, client_url, challenge), timeout=20)
    assert time.monotonic() - started < 8, "the fetch must give up within its 5 s limit"
    no_redirect(r)
    return r


def test_a_document_whose_client_id_differs_from_its_url_is_refused(server, documents):
    url = documents.serve("/impostor.json", {
        "client_id": "https://claude.ai/oauth/client.json", "client_name": "Claude",
        "redirect_uris": [REDIRECT],
    })
    assert "client_id is not the URL" in refused(server, url).text


def test_a_document_over_5_kb_is_refused(server, documents):
    url = documents.url("/big.json")
    documents.serve("/big.json", {
        "client_id": url, "client_name": "x" * 6000, "redirect_uris": [REDIRECT],
    })
    assert "larger than 5120 bytes" in refused(server, url).text


def test_a_slow_document_is_refused(server, documents):
    url = documents.good("/slow.json")
    status, headers, body, _ = documents.docs["/slow.json"]
    documents.docs["/slow.json"] = (status, headers, body, 7.0)
    assert "within" in refused(server, url).text


def test_a_redirect_is_not_followed(server, documents):
    target = documents.good("/target.json")
    url = documents.serve("/moved.json", b"", status=302, headers={"Location": target})
    before = documents.fetches.count("/target.json")
    assert "redirects are not followed" in refused(server, url).text
    assert documents.fetches.count("/target.json") == before


def test_a_redirect_uri_the_document_does_not_list_is_refused(server, documents):
    url = documents.good("/listed.json")
    _, challenge = s.pkce()
    r = httpx2.get(authorization_url(server, url, challenge,
                                     redirect_uri="http://127.0.0.1:8976/elsewhere"), timeout=10)
    no_redirect(r)


def test_a_dangerous_redirect_uri_in_a_document_is_refused(server, documents):
    url = documents.url("/js.json")
    documents.serve("/js.json", {"client_id": url, "client_name": "x", "redirect_uris": ["javascript:alert(1)"]})
    refused(server, url)


def test_a_document_on_a_private_address_is_refused_without_the_flag(upstream, documents):  # noqa: F811
    url = documents.good("/private.json")
    before = len(documents.fetches)
    with facade_basket(upstream, MCP_AUTH_CA_FILE=str(documents.ca)) as strict:
        r = refused(strict, url)
        assert "private, loopback or reserved address" in r.text
    assert len(documents.fetches) == before, "nothing was fetched"


def test_the_token_endpoint_refuses_a_client_whose_document_is_gone(server, documents):
    url = documents.good("/gone.json")
    verifier, challenge = s.pkce()
    back = s.sign_in(authorization_url(server, url, challenge), "erin")
    assert "code" in back, back
    documents.docs.pop("/gone.json")
    r = httpx2.post(as_metadata(server)["token_endpoint"], data={
        "grant_type": "authorization_code", "code": back["code"], "redirect_uri": REDIRECT,
        "client_id": url, "code_verifier": verifier, "resource": server,
    }, timeout=10)
    assert r.status_code == 401 and r.json()["error"] == "invalid_client", r.text
