"""The echo backend served over real HTTP in a thread, keeping every request body it received."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn

from infra.broker import free_port
from infra.echo_backend import EchoBackend


class RecordingBackend:
    """ASGI: records each POST body (as received and parsed), then answers as the echo backend does."""

    def __init__(self, api_key: str) -> None:
        self.echo = EchoBackend(["echo-1"], api_key=api_key)
        self.bodies: list[dict[str, Any]] = []
        self.raw_bodies: list[bytes] = []
        self._lock = threading.Lock()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.echo(scope, receive, send)
            return
        raw = b""
        while True:
            msg = await receive()
            raw += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        with self._lock:
            self.raw_bodies.append(raw)
            self.bodies.append(json.loads(raw))
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}

        await self.echo(scope, replay, send)

    def received(self, marker: str) -> list[dict[str, Any]]:
        """The bodies whose last user message contains ``marker``."""
        with self._lock:
            bodies = list(self.bodies)
        return [b for b in bodies if marker in _last_user_text(b)]


def _last_user_text(body: dict[str, Any]) -> str:
    for m in reversed(body.get("messages") or []):
        if m.get("role") == "user":
            content = m.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


@contextlib.contextmanager
def recording_backend(api_key: str) -> Iterator[tuple[str, RecordingBackend]]:
    """(base URL, the app) of a recording backend listening on a free loopback port."""
    app = RecordingBackend(api_key)
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan="off"
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("recording backend did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/v1", app
    finally:
        server.should_exit = True
        thread.join(10)
