"""Parquet export with a fixed schema (``datasets.load_dataset('parquet', ...)`` reads it as is).

sluice export --format parquet --out train.parquet
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from sinks.base import ExportWriter
from sinks.exceptions import ExportError


class ParquetWriter(ExportWriter):
    format = "parquet"
    suffix = ".parquet"

    def __init__(self, path: Path, schema: pa.Schema | None = None) -> None:
        super().__init__(path)
        if schema is None:
            raise ExportError("a Parquet export needs its schema up front")
        self.schema = schema
        self._writer = pq.ParquetWriter(path, schema, compression="zstd")

    def write(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        try:
            table = pa.Table.from_pylist(rows, schema=self.schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as err:
            raise ExportError(f"rows do not fit the export schema: {err}") from None
        self._writer.write_table(table)
        self.rows += len(rows)

    def close(self) -> None:
        self._writer.close()
