from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from assay.sandbox.bwrap.backend import BwrapBackend


@pytest.fixture(scope="session")
def bwrap_backend() -> BwrapBackend:
    backend = BwrapBackend()
    status = backend.status()
    if not status.usable:
        pytest.skip(f"bubblewrap cannot sandbox here: {status.detail}")
    return backend


@dataclass
class LoopbackServer:
    """A real HTTP server on the host's loopback, counting the requests that reached it."""

    port: int
    hits: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def serve_text(body: bytes, hits: list[str] | None = None) -> ThreadingHTTPServer:
    """A real HTTP server on the host's loopback answering every GET with ``body`` (recording paths)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            if hits is not None:
                hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def loopback_server() -> Iterator[LoopbackServer]:
    hits: list[str] = []
    server = serve_text(b"host-loopback-secret", hits)
    yield LoopbackServer(server.server_address[1], hits)
    server.shutdown()
    server.server_close()
