"""Reading request bodies safely: size limit before reading it all, UTF-8, a JSON object.

Every failure is an ``ApiError`` (400/411/413) with a message that says what was wrong.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import ClientDisconnect, Request

from pipeline.proxy.exceptions import ApiError
from sluice.json_limits import MAX_JSON_DEPTH, JsonTooDeep, loads_bounded


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The raw body; 413 as soon as ``Content-Length`` or the bytes received exceed ``max_bytes``."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise ApiError(400, f"invalid Content-Length header: {declared!r}") from None
        if size > max_bytes:
            raise ApiError(413, f"request body of {size} bytes exceeds the limit of {max_bytes} bytes")
    chunks: list[bytes] = []
    total = 0
    try:
        async for chunk in request.stream():
            total += len(chunk)
            if total > max_bytes:
                raise ApiError(413, f"request body exceeds the limit of {max_bytes} bytes")
            chunks.append(chunk)
    except ClientDisconnect:
        raise ApiError(400, "client disconnected while sending the body") from None
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def parse_json_object(body: bytes) -> dict[str, Any]:
    """A JSON object from UTF-8 bytes, or a 400 that names the problem."""
    if not body:
        raise ApiError(400, "request body is empty: expected a JSON object")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ApiError(400, f"request body is not valid UTF-8 (byte {err.start}: {err.reason})") from None
    try:
        data = loads_bounded(text, MAX_JSON_DEPTH)
    except JsonTooDeep:
        raise ApiError(
            400, f"request body is nested deeper than {MAX_JSON_DEPTH} levels of arrays/objects"
        ) from None
    except json.JSONDecodeError as err:
        raise ApiError(
            400, f"request body is not valid JSON: {err.msg} at line {err.lineno} column {err.colno}"
        ) from None
    if not isinstance(data, dict):
        raise ApiError(400, f"request body must be a JSON object, got {type(data).__name__}")
    return data


async def read_json(request: Request, max_bytes: int) -> tuple[bytes, dict[str, Any]]:
    body = await read_body(request, max_bytes)
    return body, parse_json_object(body)
