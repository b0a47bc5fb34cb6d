"""A forwarding HTTP proxy in front of the real authorization server, for the introspection
tests: the basket's MCP_AUTH_INTROSPECTION_URL points here, every request is forwarded to the
AS unchanged (method, path, headers, body) and its answer passed back, and the requests for
the introspection endpoint are counted. It can be switched "down": `refuse` closes its
listening socket (connection refused, then reopened on the same port by `up()`), `error`
answers 500 without asking the AS.

    proxy = IntrospectionProxy("http://127.0.0.1:AS_PORT", "/token/introspection")
    proxy.url -> "http://127.0.0.1:PORT"; proxy.count -> introspection requests so far
"""

import http.client
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
              "proxy-authorization", "proxy-authenticate", "host", "content-length"}


class IntrospectionProxy:
    def __init__(self, upstream: str, introspection_path: str):
        target = urlparse(upstream)
        self.upstream = (target.hostname, target.port)
        self.introspection_path = introspection_path
        self.count = 0
        self.bodies = []  # the forms the basket sent (to check client auth and the token)
        self.mode = "up"
        self.lock = threading.Lock()
        self.connections = set()  # open client sockets, cut by refuse()
        self.server = None
        self.port = 0
        self.up()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def introspection_url(self) -> str:
        return f"{self.url}{self.introspection_path}"

    def up(self) -> None:
        """Listens (again, on the same port once it has one) and forwards."""
        self.mode = "up"
        if self.server is None:
            proxy = self

            class Handler(BaseHTTPRequestHandler):
                protocol_version = "HTTP/1.1"

                def setup(self):
                    super().setup()
                    with proxy.lock:
                        proxy.connections.add(self.connection)

                def finish(self):
                    with proxy.lock:
                        proxy.connections.discard(self.connection)
                    super().finish()

                def do_GET(self):
                    proxy._forward(self)

                def do_POST(self):
                    proxy._forward(self)

                def log_message(self, *args):
                    pass

            self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
            self.server.daemon_threads = True
            self.port = self.server.server_address[1]
            threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def refuse(self) -> None:
        """Closes the listening socket, and cuts the connections already open (the basket's
        client keeps them alive): new connections to the proxy are refused."""
        self.mode = "refuse"
        self._close()
        with self.lock:
            for sock in list(self.connections):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def error(self) -> None:
        """Stays up but answers every request 500, without asking the AS."""
        self.up()
        self.mode = "error"

    def _close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def stop(self) -> None:
        self._close()

    def _forward(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        body = handler.rfile.read(length) if length else b""
        if urlparse(handler.path).path == self.introspection_path:
            with self.lock:
                self.count += 1
                self.bodies.append((dict(handler.headers), body))
        if self.mode == "error":
            payload = b'{"error":"server_error"}'
            handler.send_response(500)
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload)
            return
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in HOP_BY_HOP}
        upstream = http.client.HTTPConnection(*self.upstream, timeout=10)
        try:
            upstream.request(handler.command, handler.path, body=body, headers=headers)
            answer = upstream.getresponse()
            payload = answer.read()
            handler.send_response(answer.status, answer.reason)
            for k, v in answer.getheaders():
                if k.lower() not in HOP_BY_HOP:
                    handler.send_header(k, v)
            handler.send_header("content-length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload)
        finally:
            upstream.close()
