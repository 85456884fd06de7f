"""A real OpenAI-compatible HTTP backend that fails on a script: each request takes the next outcome.

Outcomes: ``"drop"`` closes the connection without an answer (what a client sees when a server closes a
kept-alive connection under its request), a status code answers with that error, ``"ok"`` answers the
chat completion. Once the script is used up every request is answered. ``seen`` counts the requests.
"""

from __future__ import annotations

import threading
import time

from tests.pipeline.evolve.local_backend import JsonHandler, LocalBackend


class _Handler(JsonHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802
        body = self.read_json()
        backend: FlakyBackend = self.server.backend
        with backend.lock:
            backend.seen += 1
            outcome = backend.script.pop(0) if backend.script else "ok"
        if outcome == "drop":
            self.close_connection = True
            return
        if outcome != "ok":
            self.send_json(
                int(outcome), {"error": {"message": f"scripted {outcome}", "type": "server_error"}}
            )
            return
        self.send_json(200, {
            "id": f"chatcmpl-{backend.seen}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "flaky"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        })  # fmt: skip


class FlakyBackend(LocalBackend):
    handler = _Handler

    def __init__(self, script: list[str]) -> None:
        self.script, self.seen, self.lock = list(script), 0, threading.Lock()
        super().__init__()
