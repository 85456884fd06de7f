"""Surfaces: the one error response, in the format of the API surface that was called.

OpenAI surfaces: ``{"error": {"message", "type", "param", "code"}}``; an upstream's own OpenAI-format
error body is passed through unchanged with its status. Anthropic (``/v1/messages``):
``{"type": "error", "error": {"type", "message"}}``. Unexpected exceptions become a 500 that says
nothing about internals (the traceback goes to the log, never request headers).
"""

from __future__ import annotations

import json
import logging

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from pipeline.proxy.exceptions import ApiError
from pipeline.proxy.openai_models.anthropic_shape import wants_anthropic

log = logging.getLogger(__name__)

_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def is_anthropic(path: str) -> bool:
    return path.endswith("/v1/messages") or "/v1/messages/" in path


def error_body(err: ApiError, anthropic: bool) -> bytes:
    if anthropic:
        kind = _ANTHROPIC_TYPES.get(err.status, "api_error" if err.status >= 500 else "invalid_request_error")
        return json.dumps({"type": "error", "error": {"type": kind, "message": err.message}}).encode()
    if err.upstream_body is not None:
        return err.upstream_body
    payload = {"message": err.message, "type": err.type, "param": err.param, "code": err.code}
    return json.dumps({"error": payload}).encode()


def error_response(err: ApiError, path: str, anthropic_client: bool = False) -> Response:
    """``err`` in the format of the surface at ``path``, or Anthropic's for the Anthropic SDK (a call
    that carries ``anthropic-version``) on any path."""
    headers = {"www-authenticate": "Bearer"} if err.status == 401 else None
    return Response(
        error_body(err, anthropic_client or is_anthropic(path)),
        status_code=err.status,
        media_type="application/json",
        headers=headers,
    )


async def api_error_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    state = getattr(request.app.state, "sluice", None)
    if state is not None:
        state.metrics.errors.labels(exc.type).inc()
    return error_response(exc, request.url.path, wants_anthropic(request.headers))


async def http_error_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        message = f"no such endpoint: {request.method} {request.url.path}"
    elif exc.status_code == 405:
        message = f"method {request.method} is not allowed on {request.url.path}"
    else:
        message = str(exc.detail)
    return error_response(
        ApiError(exc.status_code, message), request.url.path, wants_anthropic(request.headers)
    )


async def unexpected_error_handler(request: Request, exc: Exception) -> Response:
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    return error_response(ApiError(500, "internal proxy error (logged)", type="api_error"), request.url.path)


EXCEPTION_HANDLERS = {
    ApiError: api_error_handler,
    HTTPException: http_error_handler,
    Exception: unexpected_error_handler,
}
