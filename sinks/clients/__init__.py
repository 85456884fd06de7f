"""Reach the store from a command: through the running sink, else the file itself.

sluice query "SELECT 1"
"""

from __future__ import annotations

from sinks.base import StoreClient
from sinks.clients.http_client import SinkHttpClient, probe_sink
from sinks.clients.local_client import LocalStoreClient
from sluice.config import SluiceConfig


def connect_client(cfg: SluiceConfig, api_key: str | None) -> StoreClient:
    """The sink's endpoint when a sink serves this config's database, else the file."""
    url = probe_sink(cfg)
    if url is not None:
        return SinkHttpClient(url, api_key)
    return LocalStoreClient(cfg, api_key)


__all__ = ["LocalStoreClient", "SinkHttpClient", "connect_client"]
