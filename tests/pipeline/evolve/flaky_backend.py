"""A real OpenAI-compatible HTTP backend that fails on a script: each request takes the next outcome.

Outcomes: ``"drop"`` closes the connection without an answer (what a client sees when a server closes a
kept-alive connection under its request), a status code answers with that error, ``"ok"`` answers the
chat completion. Once the script is used up every request is answered. ``seen`` counts the requests.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, *_args: Any) -> None:
        pass

    def _send(self, status: int, body: dict[str, Any]) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        with self.server.lock:
            self.server.seen += 1
            outcome = self.server.script.pop(0) if self.server.script else "ok"
        if outcome == "drop":
            self.close_connection = True
            return
        if outcome != "ok":
            self._send(int(outcome), {"error": {"message": f"scripted {outcome}", "type": "server_error"}})
            return
        self._send(200, {
            "id": f"chatcmpl-{self.server.seen}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "flaky"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        })  # fmt: skip


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    script: list[str]
    seen: int
    lock: threading.Lock


class FlakyBackend:
    def __init__(self, script: list[str]) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.script, self._server.seen, self._server.lock = list(script), 0, threading.Lock()
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def seen(self) -> int:
        return self._server.seen

    def __enter__(self) -> FlakyBackend:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
