"""A real HTTP server on loopback that records every request and answers through a route table.

Used where the real server cannot run here (Langfuse needs Postgres, ClickHouse, Redis and S3)
and to look at what an OTLP exporter actually sends (headers, resource, spans)."""

from __future__ import annotations

import gzip
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

Route = Callable[["Request"], tuple[int, Any]]


@dataclass
class Request:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"null")

    def spans(self) -> list[Any]:
        """Spans of an OTLP/HTTP protobuf export request, decoded with the official proto."""
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        msg = ExportTraceServiceRequest()
        msg.ParseFromString(self.body)
        return [(rs.resource, span) for rs in msg.resource_spans for ss in rs.scope_spans for span in ss.spans]


class Recorder:
    def __init__(self, routes: dict[tuple[str, str], Route] | None = None):
        self.routes = routes or {}
        self.requests: list[Request] = []
        self.lock = threading.Lock()
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def _serve(self) -> None:
                path, _, query = self.path.partition("?")
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                req = Request(self.command, path, query, {k.lower(): v for k, v in self.headers.items()}, body)
                with recorder.lock:
                    recorder.requests.append(req)
                route = recorder.match(self.command, path)
                status, payload = route(req) if route else (404, {"message": f"no route {self.command} {path}"})
                data = payload if isinstance(payload, bytes) else json.dumps(payload, default=str).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf" if isinstance(payload, bytes) else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def match(self, method: str, path: str) -> Route | None:
        if (method, path) in self.routes:
            return self.routes[(method, path)]
        for (m, prefix), route in self.routes.items():
            if m == method and prefix.endswith("/*") and path.startswith(prefix[:-1]):
                return route
        return None

    def __enter__(self) -> "Recorder":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def of(self, method: str, path: str) -> list[Request]:
        with self.lock:
            return [r for r in self.requests if r.method == method and r.path == path]
