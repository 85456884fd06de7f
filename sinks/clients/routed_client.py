"""A long-lived store client that follows the sink as it stops and starts.

A command or a wait loop picks the sink's endpoint when a sink serves the database, else the file.
Either choice can go stale: a sink that was down when the client was made holds the file's lock once the
supervisor restarts it, and a sink that was up may die. On such a route failure a query picks its route
again and is retried, for up to ``route_wait_s`` (a sink that is starting holds the file's lock a moment
before its endpoint answers); errors of the call itself (bad SQL, refused access) pass through unchanged. An erasure
is never retried behind the caller's back (the sink may have died half-way through it): it picks its
route afresh and reports a failure as it is, and the operator re-runs it, which completes it.

    client = connect_client(cfg, None)   # a RoutedStoreClient
    client.query("SELECT count(*) FROM trajectories")
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pyarrow as pa

from sinks.base import StoreClient
from sinks.clients.http_client import SinkHttpClient, probe_sink
from sinks.clients.local_client import LocalStoreClient
from sinks.erasure_models import ErasureRequest, ErasureResult
from sinks.exceptions import ANSWERED_ERRORS, SinkError
from sinks.settings import SinkSettings

T = TypeVar("T")


def pick_route(cfg: SinkSettings, api_key: str | None) -> StoreClient:
    """The sink's endpoint when a sink serves this config's database now, else the file."""
    url = probe_sink(cfg)
    if url is not None:
        return SinkHttpClient(url, api_key)
    return LocalStoreClient(cfg, api_key)


def is_route_failure(err: SinkError) -> bool:
    """The route itself failed (file locked by a sink that came up, sink that stopped answering)."""
    return not isinstance(err, ANSWERED_ERRORS)


class RoutedStoreClient:
    def __init__(self, cfg: SinkSettings, api_key: str | None, route_wait_s: float = 20.0) -> None:
        self._cfg, self._api_key, self._route_wait_s = cfg, api_key, route_wait_s
        self._route = pick_route(cfg, api_key)

    @property
    def where(self) -> str:
        return self._route.where

    def _call(self, fn: Callable[[StoreClient], T]) -> T:
        deadline = time.monotonic() + self._route_wait_s
        while True:
            try:
                return fn(self._route)
            except SinkError as err:
                if not is_route_failure(err) or time.monotonic() >= deadline:
                    raise
            time.sleep(0.25)
            self._route.close()
            self._route = pick_route(self._cfg, self._api_key)

    def query(self, sql: str) -> pa.RecordBatchReader:
        return self._call(lambda route: route.query(sql))

    def erase(self, request: ErasureRequest) -> ErasureResult:
        self._route.close()
        self._route = pick_route(self._cfg, self._api_key)
        return self._route.erase(request)

    def close(self) -> None:
        self._route.close()
