"""Starts the basket example on a free loopback port for the client tests."""

import contextlib
import os
import socket
import subprocess
import time
import urllib.request

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def basket(**env_overrides):
    """Runs the basket binary with `env_overrides`; yields its MCP URL."""
    port = free_port()
    env = dict(os.environ, MCP_BIND=f"127.0.0.1:{port}", MCP_LOG="warn", **env_overrides)
    proc = subprocess.Popen([os.environ["BASKET_BIN"]], env=env)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the basket server did not start")
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="session")
def basket_url():
    with basket() as url:
        yield url


@pytest.fixture
def anyio_backend():
    return "asyncio"
