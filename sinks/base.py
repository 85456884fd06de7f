"""Plug points of the store: how a command reaches the store, and how an export file is written.

``StoreClient``: ``SinkHttpClient`` (the running sink's endpoint) or ``LocalStoreClient`` (the file,
when no sink runs); ``sinks.clients.connect_client`` picks one. ``ExportWriter``: ``JsonlWriter`` or
``ParquetWriter`` in ``sinks/export/``.

    sluice query "SELECT count(*) FROM trajectories"
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa

from sinks.erasure_models import ErasureRequest, ErasureResult


class StoreClient(Protocol):
    """A way to run read-only queries and erasures against the store, as one principal."""

    where: str  # for messages: "sink at http://..." or "file ... (read-only)"

    def query(self, sql: str) -> pa.RecordBatchReader:
        """Stream the result; raises ``QueryError``/``QueryRejected``/``AuthError``."""
        ...

    def erase(self, request: ErasureRequest) -> ErasureResult: ...

    def close(self) -> None: ...


class ExportWriter(ABC):
    """Writes export rows (dicts of the RL/SFT layout) to one file, incrementally."""

    format: str = ""
    suffix: str = ""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows = 0

    @abstractmethod
    def write(self, rows: list[dict[str, Any]]) -> None: ...

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> ExportWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
