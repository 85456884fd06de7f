"""Reach the store from a command: through the running sink, else the file itself, picked again
whenever the sink stops or starts.

sluice query "SELECT 1"
"""

from __future__ import annotations

from sinks.admin_key import ensure_admin_key
from sinks.base import StoreClient
from sinks.clients.http_client import SinkHttpClient
from sinks.clients.local_client import LocalStoreClient
from sinks.clients.routed_client import RoutedStoreClient
from sinks.settings import SinkSettings


def connect_client(cfg: SinkSettings, api_key: str | None) -> StoreClient:
    """The sink's endpoint when a sink serves this config's database, else the file. Without a key the
    caller is the operator if it can read the operator key file (same OS user), else it is refused."""
    if not api_key:
        api_key = ensure_admin_key(cfg)
    return RoutedStoreClient(cfg, api_key)


__all__ = ["LocalStoreClient", "RoutedStoreClient", "SinkHttpClient", "connect_client"]
