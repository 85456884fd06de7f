"""Print a query result as a rich table, CSV, JSON or JSON Lines.

sluice query --format csv "SELECT trajectory_id, reward FROM trajectories"
"""

from __future__ import annotations

import csv
import json
import sys
from typing import Any, TextIO

import pyarrow as pa
from rich.console import Console
from rich.table import Table

FORMATS = ("table", "csv", "json", "jsonl")
_CELL_MAX = 200


def _cell(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= _CELL_MAX else text[: _CELL_MAX - 1] + "…"


def _csv_value(value: Any) -> Any:
    if isinstance(value, list | dict):
        return json.dumps(value, default=str, ensure_ascii=False)
    return value


def write_result(table: pa.Table, fmt: str, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    rows = table.to_pylist()
    if fmt == "json":
        out.write(json.dumps(rows, default=str, ensure_ascii=False, indent=2) + "\n")
    elif fmt == "jsonl":
        for row in rows:
            out.write(json.dumps(row, default=str, ensure_ascii=False) + "\n")
    elif fmt == "csv":
        writer = csv.writer(out)
        writer.writerow(table.column_names)
        for row in rows:
            writer.writerow([_csv_value(v) for v in row.values()])
    else:
        grid = Table(show_lines=False, header_style="bold")
        for name in table.column_names:
            grid.add_column(name, overflow="fold")
        for row in rows:
            grid.add_row(*(_cell(v) for v in row.values()))
        Console(file=out, width=max(80, Console().width)).print(grid)
        out.write(f"({len(rows)} row{'s' if len(rows) != 1 else ''})\n")
