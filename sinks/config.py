"""Config of the DuckDB sink (the ``sink:`` section of the YAML file).

The sink is the single writer of its DuckDB file; queries, exports and erasures made while it runs go
through its loopback HTTP endpoint (``query_host``/``query_port``), and open the file read-only when it
does not run.

    sluice sink --config infra/sluice.yaml
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator

from sluice.frozen import Frozen


class SinkConfig(Frozen):
    database: Path = Field(Path("var/sluice.duckdb"), description="DuckDB file the sink owns.")
    group_id: str = Field("sluice-sink", description="Consumer group; offsets live in DuckDB, not Kafka.")
    assignment: Literal["group", "manual"] = Field(
        "group",
        description="group: subscribe and seek to the offsets stored in DuckDB on assignment; "
        "manual: assign every partition at start (no group join, one sink per database).",
    )
    batch_max_rows: int = Field(
        20_000,
        ge=1,
        description="Flush once this many rows are pending. Larger batches write faster (fewer, bigger "
        "transactions) and hold more memory: about 4 KB per pending row of a 10-step trajectory.",
    )
    batch_max_wait_s: float = Field(
        0.5, gt=0, description="Flush once the oldest pending record is this old."
    )
    checkpoint_threshold_mb: int = Field(
        256,
        ge=1,
        description="WAL size that triggers a DuckDB checkpoint; larger means fewer rewrites of the "
        "partly filled row group while ingesting (16 MB, DuckDB's default, halves throughput).",
    )
    row_group_size: int = Field(
        8192,
        ge=2048,
        multiple_of=2048,
        description="Rows per DuckDB row group the sink writes. A batch's full row groups go to the file "
        "compressed at commit instead of through the WAL and again at the checkpoint; DuckDB's own "
        "122,880 is more than a batch holds (python -m bench.sink_phases compares them).",
    )
    memory_limit: str | None = Field(
        None, description="DuckDB memory_limit of the sink, e.g. '2GB' (default: DuckDB's, 80% of RAM)."
    )
    query_host: str = Field("127.0.0.1", description="Loopback address of the query endpoint.")
    query_port: int = Field(8790, ge=0, le=65535, description="Port of the query endpoint (0 = off).")
    admin_key: SecretStr | None = Field(
        None,
        description="The operator key for unscoped queries, exports and erasures. Unset: one is made at "
        "first start in admin_key_file. A caller with no key is always refused.",
    )
    admin_key_file: Path = Field(
        Path("var/admin.key"),
        description="Where the operator key made at first start lives (mode 0600); commands of the same "
        "OS user read it when no --api-key is given.",
    )
    exports_registry: Path = Field(
        Path("var/exports/registry.jsonl"),
        description="One line per export written (its manifest path): erasure receipts list the exports "
        "that hold erased trajectories.",
    )
    require_redacted: bool = Field(
        True, description="Refuse (dead-letter, content withheld) trajectories with unredacted steps."
    )
    tombstones: Literal["delete", "ignore"] = Field(
        "delete",
        description="A tombstone on the audited topic deletes that trajectory's rows, or is skipped.",
    )
    progress_interval_s: float = Field(10.0, gt=0, description="How often progress is logged.")
    lag_interval_s: float = Field(5.0, gt=0, description="How often consumer lag is measured.")
    producer_timeout_s: float = Field(30.0, gt=0, description="Give up publishing erasure tombstones after.")

    @field_validator("admin_key")
    @classmethod
    def _empty_is_unset(cls, v: SecretStr | None) -> SecretStr | None:
        return v if v is not None and v.get_secret_value() else None

    @field_validator("memory_limit")
    @classmethod
    def _size(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"\d+(\.\d+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)", v.strip()):
            raise ValueError(f"memory_limit must look like '512MB' or '2GB', got {v!r}")
        return v

    @field_validator("query_host")
    @classmethod
    def _loopback(cls, v: str) -> str:
        host = "127.0.0.1" if v == "localhost" else v
        try:
            if not ipaddress.ip_address(host).is_loopback:
                raise ValueError
        except ValueError:
            raise ValueError(f"query_host must be a loopback address, got {v!r}") from None
        return host
