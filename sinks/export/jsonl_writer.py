"""JSON Lines export: one object per row, ``None`` fields left out (what chat templates expect).

sluice export --format jsonl --out train.jsonl
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from sinks.base import ExportWriter


def _compact(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _compact(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_compact(v) for v in value]
    return value


class JsonlWriter(ExportWriter):
    format = "jsonl"
    suffix = ".jsonl"

    def __init__(self, path: Path, schema: pa.Schema | None = None) -> None:
        super().__init__(path)
        self._file = path.open("w", encoding="utf-8")

    def write(self, rows: list[dict[str, Any]]) -> None:
        for row in rows:
            self._file.write(json.dumps(_compact(row), ensure_ascii=False, default=str) + "\n")
        self.rows += len(rows)

    def close(self) -> None:
        self._file.close()
