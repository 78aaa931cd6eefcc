"""What the webshop's wall and attack tests share: a server outside the harness that must never be hit."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest


@pytest.fixture
def outside() -> Iterator[tuple[str, list[str]]]:
    """A real HTTP server on loopback, not the harness: it must never be hit."""
    hits: list[str] = []

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            # the page names its icon: a browser that reached it fetches nothing more by itself (a
            # /favicon.ico asked after the page had loaded would count as a second hit, later)
            self.wfile.write(b'<!doctype html><link rel="icon" href="data:,"><body>outside</body>')

        def log_message(self, *a: object) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/steal", hits
    finally:
        srv.shutdown()
        srv.server_close()
