"""The control plane's HTTP calls to model backends (the gates' evaluation, the model proposer).

A pooled connection is let go after ``keepalive_expiry_s`` idle, below the shortest keep-alive a server
commonly keeps (uvicorn's 5 s, which is also httpx's own expiry: at equal values a request can be sent
on a connection the server is closing, and fails with ``RemoteProtocolError`` while the server logs
nothing). An idempotent call is tried again, a bounded number of times with a doubling backoff, on a
connection-level failure or a 502/503/504; never on a 4xx, nor on a read timeout (the server got the
request and is slow: trying again would only multiply the wait).
"""

from __future__ import annotations

import time
from typing import Any

import httpx
from pydantic import Field

from sluice.frozen import Frozen

RETRY_STATUS = frozenset({502, 503, 504})
RETRY_ERRORS = (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ConnectTimeout, httpx.PoolTimeout)


class CallPolicy(Frozen):
    """How the control plane keeps and retries its connections to a model backend."""

    keepalive_expiry_s: float = Field(
        2.0,
        gt=0,
        description="Idle seconds before a pooled connection is dropped; kept below the server's keep-alive "
        "timeout (uvicorn's default is 5 s), so no request goes out on a connection the server is closing.",
    )
    attempts: int = Field(
        3, ge=1, le=10, description="Tries of one call on a connection error or a 502/503/504 (never a 4xx)."
    )
    backoff_s: float = Field(
        0.5, ge=0, le=30, description="Wait before the second try, doubled before each later one."
    )


class CallFailed(RuntimeError):
    """The call failed at the connection level (``error``: the last failure's type) after ``attempts``."""

    def __init__(self, error: str, attempts: int) -> None:
        super().__init__(f"{error} after {attempts} attempt{'s' if attempts > 1 else ''}")
        self.error, self.attempts = error, attempts


def open_client(timeout_s: float, policy: CallPolicy) -> httpx.Client:
    """A pooled client whose idle connections expire before the server closes them."""
    return httpx.Client(timeout=timeout_s, limits=httpx.Limits(keepalive_expiry=policy.keepalive_expiry_s))


def post_json(
    client: httpx.Client, url: str, body: dict[str, Any], headers: dict[str, str], policy: CallPolicy
) -> tuple[httpx.Response, int]:
    """POST an idempotent JSON call: the last response (a 502/503/504 when every try got one) and the
    tries it took. Raises ``CallFailed`` when the last try failed at the connection level."""
    for attempt in range(1, policy.attempts + 1):
        try:
            resp = client.post(url, json=body, headers=headers)
        except RETRY_ERRORS as err:
            if attempt == policy.attempts:
                raise CallFailed(type(err).__name__, attempt) from None
        except httpx.HTTPError as err:  # a read timeout, a bad URL: not tried again
            raise CallFailed(type(err).__name__, attempt) from None
        else:
            if resp.status_code not in RETRY_STATUS or attempt == policy.attempts:
                return resp, attempt
        time.sleep(policy.backoff_s * 2 ** (attempt - 1))
    raise AssertionError("unreachable: the last attempt returns or raises")
