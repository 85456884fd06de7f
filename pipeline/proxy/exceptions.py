"""Proxy errors: ``ApiError``, the one error an agent sees, under the proxy's root error.

The error handlers (``surfaces.errors``) render ``ApiError`` in the format of the API surface that was
called (OpenAI or Anthropic)."""

from __future__ import annotations

from sluice.errors import SluiceError


class ProxyError(SluiceError):
    """Root of the proxy's errors."""


class ApiError(ProxyError):
    """An error answered to the agent: HTTP status, message, and the OpenAI-style type/param/code."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str | None = None,  # noqa: A002 - the API's own field name
        param: str | None = None,
        code: str | None = None,
        upstream_body: bytes | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type or default_error_type(status)
        self.param = param
        self.code = code
        self.upstream_body = upstream_body  # an upstream's own OpenAI-format error, passed through as is


class PublishError(ProxyError):
    """Events could not be handed to the publisher (spool unusable)."""


class SpoolError(PublishError):
    """The disk spool is unreadable or unwritable."""


def default_error_type(status: int) -> str:
    """OpenAI error type for an HTTP status."""
    if status == 401:
        return "authentication_error"
    if status == 403:
        return "permission_error"
    if status == 404:
        return "not_found_error"
    if status == 413:
        return "request_too_large"
    if status == 429:
        return "rate_limit_error"
    if status < 500:
        return "invalid_request_error"
    if status in (502, 503, 504):
        return "upstream_error"
    return "api_error"
