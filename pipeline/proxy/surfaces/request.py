"""Surfaces: each request read once, from its bytes to its typed request model.

``read_request`` reads the body (size limit before reading it all, and again once a gzip or deflate body
is decompressed), parses it as one UTF-8 JSON object and validates it into the surface's request model,
which keeps the bytes as received (``wire``): serving, recording and the backend call are handed that
one typed request, and a body nothing has to be added to goes upstream as it arrived.

Protocol models accept unknown fields (passed upstream untouched) and say which they were. Field types
are checked strictly, as the providers' APIs check them: ``"stream": "false"``, ``"n": "2"`` or
``"max_tokens": 5.5`` is a 400 naming the field, not a value read one way here and another way by the
backend the body goes to (an integer is a valid number). Every failure is an ``ApiError`` (400/413/415)
with a message that says what was wrong.
"""

from __future__ import annotations

import json
import logging
import zlib
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError
from starlette.requests import ClientDisconnect, Request

from pipeline.proxy.exceptions import ApiError
from sluice.errors import validation_problems
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
    body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    return decoded(body, request.headers.get("content-encoding"), max_bytes)


def decoded(body: bytes, encoding: str | None, max_bytes: int) -> bytes:
    """The body under its ``Content-Encoding`` (gzip, deflate or identity), at most ``max_bytes`` once
    decompressed (a small bomb is refused as soon as it grows past the limit); 415 for another coding."""
    coding = (encoding or "identity").strip().lower()
    if coding in ("", "identity"):
        return body
    if coding not in ("gzip", "x-gzip", "deflate"):
        raise ApiError(415, f"unsupported Content-Encoding {coding!r}: send gzip, deflate or none")
    # gzip: a gzip header; deflate: zlib-wrapped as HTTP says, or raw as some clients send it
    if coding != "deflate":
        wbits = 16 + zlib.MAX_WBITS
    else:
        wbits = zlib.MAX_WBITS if body[:1] and (body[0] & 0x0F) == 8 else -zlib.MAX_WBITS
    inflater = zlib.decompressobj(wbits)
    try:
        out = inflater.decompress(body, max_bytes + 1)
    except zlib.error as err:
        raise ApiError(400, f"request body is not valid {coding} data: {err}") from None
    if len(out) > max_bytes or inflater.unconsumed_tail:
        raise ApiError(413, f"request body exceeds the limit of {max_bytes} bytes once decompressed")
    if not inflater.eof:
        raise ApiError(400, f"request body is truncated {coding} data")
    return out


def parse_json_object(body: bytes) -> dict[str, Any]:
    """A JSON object from UTF-8 bytes, or a 400 that names the problem."""
    if not body:
        raise ApiError(400, "request body is empty: expected a JSON object")
    try:
        text = body.decode(
            "utf-8-sig"
        )  # a leading byte-order mark, as some Windows clients send, is not JSON
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


log = logging.getLogger(__name__)
_seen_unknown: set[tuple[str, str]] = set()


TOKENS_MAX = 2**31 - 1  # no model has more positions than this
TokenCount = Annotated[int, Field(ge=0, le=TOKENS_MAX)]
"""A number of tokens (``max_tokens`` and the like)."""
TokenLimit = Annotated[int, Field(ge=1, le=TOKENS_MAX)]
"""A limit on generated tokens where the API requires at least one."""
Seed = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
"""A sampling seed: a signed 64-bit integer, as the OpenAI API takes it."""


class OpenModel(BaseModel):
    """A request model that keeps unknown fields, and the body bytes it was read from (``wire``)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, strict=True)
    _wire: bytes | None = PrivateAttr(None)

    @property
    def wire(self) -> bytes | None:
        """The body as the agent sent it (decompressed); None for a request the proxy built itself."""
        return self._wire

    def unknown_fields(self) -> list[str]:
        return sorted(self.model_extra or ())

    def upstream_body(self, changes: dict[str, Any] | None = None) -> bytes:
        """The body for the backend: the bytes as received when there is nothing to change, else this
        request with ``changes`` serialised once (fields the agent did not send stay out)."""
        if not changes and self._wire is not None:
            return self._wire
        req = self.model_copy(update=changes) if changes else self
        return req.model_dump_json(exclude_unset=True).encode()


M = TypeVar("M", bound=OpenModel)


def validate_request(model: type[M], body: dict[str, Any], surface: str, metrics: Any = None) -> M:
    """Validate a request body; 400 with the first bad field as ``param``."""
    try:
        req = model.model_validate(body)
    except ValidationError as err:
        loc, msg = validation_problems(err)[0]
        more = f" (and {err.error_count() - 1} more problems)" if err.error_count() > 1 else ""
        raise ApiError(400, f"{loc}: {msg}{more}", param=loc or None) from None
    unknown = req.unknown_fields()
    if unknown:
        if metrics is not None:
            metrics.unknown_fields.labels(surface).inc(len(unknown))
        for name in unknown:
            if (surface, name) not in _seen_unknown and len(_seen_unknown) < 1000:
                _seen_unknown.add((surface, name))
                log.info("%s: passing through field %r the proxy does not interpret", surface, name)
    return req


async def read_request(request: Request, model: type[M], surface: str, state: Any) -> M:
    """The body of ``request`` read, parsed and validated once into ``model`` (keeping its bytes)."""
    raw = await read_body(request, state.config.proxy.max_body_bytes)
    req = validate_request(model, parse_json_object(raw), surface, state.metrics)
    req._wire = raw
    return req
