"""Rewriting an export without erased trajectories: the file and its manifest, atomically.

Rows whose ``trajectory_id`` (or, for preference pairs, ``chosen_trajectory_id``) is erased are dropped; the file is rewritten next to itself and renamed
into place, and the manifest's counts, ids and sha256 follow. JSONL is filtered line by line, Parquet
row group by row group, so memory stays bounded by one row group.

    rewrite_without(Path("var/exports/train.parquet.manifest.json"), {"acme~t1"})
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sinks.export.digest import file_sha256


def _filter_jsonl(src: Path, dst: Path, erased: set[str]) -> tuple[int, int]:
    kept = dropped = 0
    with src.open(encoding="utf-8") as fin, dst.open("w", encoding="utf-8") as fout:
        for line in fin:
            row = json.loads(line) if line.strip() else {}
            if row.get("trajectory_id") in erased or row.get("chosen_trajectory_id") in erased:
                dropped += 1
                continue
            fout.write(line)
            kept += 1
    return kept, dropped


def _filter_parquet(src: Path, dst: Path, erased: set[str]) -> tuple[int, int]:
    kept = dropped = 0
    source = pq.ParquetFile(src)
    gone = pa.array(sorted(erased), pa.string())
    with pq.ParquetWriter(dst, source.schema_arrow) as writer:
        for i in range(source.num_row_groups):
            table = source.read_row_group(i)
            hit = pc.fill_null(pc.is_in(table["trajectory_id"], value_set=gone), False)
            if "chosen_trajectory_id" in table.column_names:
                chosen = pc.fill_null(pc.is_in(table["chosen_trajectory_id"], value_set=gone), False)
                hit = pc.or_(hit, chosen)
            part = table.filter(pc.invert(hit))
            dropped += table.num_rows - part.num_rows
            kept += part.num_rows
            writer.write_table(part)
    return kept, dropped


def rewrite_without(manifest: Path, erased: set[str]) -> int:
    """Drop the erased trajectories' rows from the export this manifest describes. Returns rows dropped."""
    data = json.loads(manifest.read_text())
    src = manifest.with_name(data["file"])
    tmp = src.with_name(src.name + ".erasing")
    try:
        kept, dropped = (_filter_parquet if data.get("format") == "parquet" else _filter_jsonl)(
            src, tmp, erased
        )
        tmp.replace(src)
    finally:
        tmp.unlink(missing_ok=True)
    left = sorted(set(data.get("trajectory_ids") or []) - erased)
    data.update(
        rows=kept,
        trajectories=len(left),
        trajectory_ids=left,
        bytes=src.stat().st_size,
        sha256=file_sha256(src),
    )
    manifest.write_text(json.dumps(data, indent=2) + "\n")
    return dropped
