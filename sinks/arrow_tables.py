"""Arrow schemas of the store's tables, derived from their DuckDB DDL, and rows -> ``pyarrow.Table``.

The sink writes through Arrow: a batch of rows becomes one ``pyarrow.Table`` per store table, which DuckDB
scans in bulk (``INSERT ... SELECT FROM`` a registered Arrow table) instead of row-at-a-time inserts.

    python -m bench.sink
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import Any

import pyarrow as pa

from sinks.schema import COMPUTED_COLUMNS, TABLES

_SCALARS: dict[str, pa.DataType] = {
    "VARCHAR": pa.string(),
    "JSON": pa.string(),
    "INTEGER": pa.int32(),
    "BIGINT": pa.int64(),
    "DOUBLE": pa.float64(),
    "BOOLEAN": pa.bool_(),
    "TIMESTAMPTZ": pa.timestamp("us", tz="UTC"),
}

_COLUMN = re.compile(r'^\s*"?([a-z_0-9]+)"?\s+([A-Z]+)(\[\])?')


def _arrow_type(name: str, is_list: bool) -> pa.DataType:
    base = _SCALARS[name]
    return pa.list_(base) if is_list else base


@cache
def arrow_schema(table: str) -> pa.Schema:
    """Arrow schema of the rows the sink builds for a store table: its DDL's columns in order, less those
    DuckDB computes as it inserts (``COMPUTED_COLUMNS``)."""
    computed = COMPUTED_COLUMNS.get(table, {})
    fields = []
    for line in TABLES[table].split(","):
        m = _COLUMN.match(line)
        if m is None or m.group(1) == "primary" or m.group(1) in computed:
            continue
        fields.append(pa.field(m.group(1), _arrow_type(m.group(2), bool(m.group(3)))))
    return pa.schema(fields)


def columns(table: str) -> list[str]:
    return arrow_schema(table).names


@contextmanager
def gc_paused() -> Iterator[None]:
    """Cyclic GC off while converting: converting a batch allocates many container objects, which made the
    collector traverse every live row of the batch again and again (about half of the conversion time).
    Re-enabled only by whoever disabled it, so nested or concurrent use leaves it on afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def to_arrow(table: str, rows: Sequence[dict[str, Any]]) -> pa.Table:
    """Rows (dicts keyed by column name; missing keys are NULL) as an Arrow table of ``table``'s schema.

    Fast path: when the rows are what ``sinks.flatten`` builds, one builder per table whose keys are the
    schema's columns in order (``tests/sinks/test_flatten.py`` holds every builder to that), they are
    transposed with ``zip`` in C instead of one lookup per cell. The first row's key order and every
    row's length are checked: comparing every row's keys cost 15% of the conversion.
    """
    with gc_paused():
        return _to_arrow(table, rows)


def _to_arrow(table: str, rows: Sequence[dict[str, Any]]) -> pa.Table:
    schema = arrow_schema(table)
    names = schema.names
    if not rows:
        return schema.empty_table()
    n = len(names)
    if tuple(rows[0]) == tuple(names) and all(len(r) == n for r in rows):
        cols = zip(*(r.values() for r in rows), strict=True)
        return pa.Table.from_arrays(
            [pa.array(c, type=f.type) for c, f in zip(cols, schema, strict=True)], schema=schema
        )
    data = {name: [r.get(name) for r in rows] for name in names}
    return pa.Table.from_pydict(data, schema=schema)
