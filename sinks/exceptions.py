"""Errors of the DuckDB sink, its queries, exports and erasures (all subclass ``SluiceError``)."""

from __future__ import annotations

from sluice.errors import SluiceError


class SinkError(SluiceError):
    """The sink could not open its database, consume, or write."""


class QueryError(SinkError):
    """A query failed: DuckDB's own message (bad SQL, unknown column) or an unreachable store."""


class QueryRejected(QueryError):
    """A query was refused before it ran: not read-only, or reaching outside the caller's tenant."""


class AuthError(SinkError):
    """An API key was unknown, or an operator-only action was asked for without the admin key."""


class AccessDenied(SinkError):
    """A valid key asked for something outside its tenant (HTTP 403): nothing was changed."""


class NotFound(SinkError):
    """The thing named does not exist for this key (HTTP 404): nothing was changed."""


class ErasureError(SinkError):
    """An erasure request was invalid or could not be completed (see the ``erasures`` audit table)."""


class ExportError(SinkError):
    """An export could not be written."""


# The errors a sink endpoint answers with, by the ``kind`` of its JSON error body. Raised by a route that
# answered, they (and QueryError) would not change with another route.
ERROR_BY_KIND: dict[str, type[SinkError]] = {
    "auth": AuthError,
    "forbidden": AccessDenied,
    "not_found": NotFound,
    "rejected": QueryRejected,
    "erasure": ErasureError,
}
ANSWERED_ERRORS: tuple[type[SinkError], ...] = (*ERROR_BY_KIND.values(), QueryError)
