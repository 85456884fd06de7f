"""The Faust worker's own config section: ``StagesConfig``."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from sluice.frozen import Frozen


class StagesConfig(Frozen):
    """The Faust worker that runs the governance stages."""

    app_id: str = "sluice-stages"
    data_dir: Path = Path("var/stages")
    workers: int = Field(1, ge=1, description="Worker processes started by `sluice up`.")
    web_port: int | None = Field(None, description="Faust web port; None runs --without-web.")
    store: Literal["rocksdb", "memory"] = Field(
        "rocksdb",
        description="Table store: rocksdb keeps join state on disk (days-long waits are not bounded by "
        "RAM; restarts reuse it); memory rebuilds every table from its changelog on start.",
    )
    rocksdb_cache_mb: int = Field(64, ge=1, description="RocksDB block cache per table partition.")
    commit_interval_s: float = Field(1.0, gt=0, description="How often processed offsets are committed.")
    stats_interval_s: float = Field(30.0, gt=0, description="How often the worker logs its counters.")
    heartbeat_s: float = Field(
        2.0,
        gt=0,
        description="How often the worker refreshes its heartbeat file (what `sluice status` reads).",
    )
