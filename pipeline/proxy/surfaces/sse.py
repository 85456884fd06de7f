"""Surfaces: server-sent events on the wire (split an upstream byte stream, write events; pure)."""

from __future__ import annotations

import json
from typing import Any


class SseSplitter:
    """Feed arbitrary byte chunks; get back complete events (each without its blank-line terminator)."""

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, data: bytes) -> list[bytes]:
        buf = self._buf + data
        if b"\r" in buf:
            buf = buf.replace(b"\r\n", b"\n")
        *events, self._buf = buf.split(b"\n\n")
        return [e for e in events if e.strip()]

    def tail(self) -> list[bytes]:
        """What is left when the stream ends (an unterminated last event)."""
        rest, self._buf = self._buf, b""
        return [rest] if rest.strip() else []


def event_data(event: bytes) -> bytes | None:
    """The data payload of one event (several ``data:`` lines joined by newlines); None if it has none."""
    if event.startswith(b"data: ") and b"\n" not in event:
        return event[6:]
    lines = [line[5:].removeprefix(b" ") for line in event.split(b"\n") if line.startswith(b"data:")]
    return b"\n".join(lines) if lines else None


def encode_data(obj: Any) -> bytes:
    """``data: <json>\\n\\n``"""
    return b"data: " + json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


def encode_event(name: str, obj: Any) -> bytes:
    """``event: <name>\\ndata: <json>\\n\\n`` (the Anthropic and Responses streams name their events)."""
    data = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
    return b"event: " + name.encode() + b"\ndata: " + data + b"\n\n"


DONE = b"data: [DONE]\n\n"
