"""A real HTTP server on a free local port, in a thread, for backends that stand in for a model server.

``LocalBackend`` owns the server's lifetime (a context manager) and its state; a handler class derived from
``JsonHandler`` reaches that state as ``self.server.backend`` and answers JSON with ``send_json``.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    backend: Any


class JsonHandler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *_args: Any) -> None:
        pass

    def read_json(self) -> dict[str, Any]:
        return json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")

    def send_json(self, status: int, body: dict[str, Any]) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


class LocalBackend:
    """Serves ``handler`` on 127.0.0.1 while entered; ``base_url`` is its OpenAI base URL."""

    handler: type[JsonHandler]

    def __init__(self) -> None:
        self._server = _Server(("127.0.0.1", 0), self.handler)
        self._server.backend = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
