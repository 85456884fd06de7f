"""Where the sink's write time goes, and what two of its settings buy (A/B in one run).

Same workload and batches as ``bench.sink`` (30,000 trajectories x 10 steps, batches the size of the
sink's default ``batch_max_rows``). For each
store variant, in alternating rounds: seconds to build the Arrow tables, to insert and commit (one
transaction per batch, offsets included), and for the final CHECKPOINT, plus the database file size.
Variants: ``shipped`` (the sink's defaults), ``row_groups_default`` (DuckDB's 122,880-row groups
instead of ``sink.row_group_size``) and ``auto_compression`` (DuckDB's choice of string compression
instead of zstd on the JSON ``record`` columns). Best of two rounds per variant. Ends with one JSON
line; the target is the one ``bench.sink`` checks (50,000 steps/s over the three phases).

    python -m bench.sink_phases      # ~1.5 min
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import sinks.schema as schema
from bench.sink import ROWS_PER_TRAJECTORY, STEPS, batches, warm_up, workload
from sinks.batch import PendingBatch
from sinks.config import SinkConfig
from sinks.store import INSERT_SQL, DuckDBStore
from sluice.events import encode

TRAJECTORIES, ROUNDS = 30_000, 2
DUCKDB_ROW_GROUP = 122_880  # DuckDB's default row-group size
SINK = SinkConfig()
PER_BATCH = SINK.batch_max_rows // ROWS_PER_TRAJECTORY
SHIPPED = dict(schema.TABLES)
AUTO_COMPRESSION = {k: v.replace(" USING COMPRESSION zstd", "") for k, v in SHIPPED.items()}
# name -> (table DDL, sink settings)
VARIANTS = {
    "shipped": (SHIPPED, SINK),
    "row_groups_default": (SHIPPED, SINK.model_copy(update={"row_group_size": DUCKDB_ROW_GROUP})),
    "auto_compression": (AUTO_COMPRESSION, SINK),
}


def measure(bs: list[PendingBatch], db: Path, sink: SinkConfig) -> dict[str, float]:
    store = DuckDBStore.for_sink(db, sink)
    arrow_s = write_s = 0.0
    for b in bs:
        t0 = time.perf_counter()
        tables = b.arrow_tables()
        t1 = time.perf_counter()
        store._write(b, tables, "bench", INSERT_SQL)  # write() minus its Arrow step, timed above
        arrow_s, write_s = arrow_s + t1 - t0, write_s + time.perf_counter() - t1
    t0 = time.perf_counter()
    store.checkpoint()
    checkpoint_s = time.perf_counter() - t0
    store.close()
    total = arrow_s + write_s + checkpoint_s
    return {
        "arrow_s": arrow_s,
        "insert_commit_s": write_s,
        "checkpoint_s": checkpoint_s,
        "steps_per_s": TRAJECTORIES * STEPS / total,
        "db_mb": db.stat().st_size / 1e6,
    }


def main() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="bench-sink-phases-"))
    values = [(t.trajectory_id, encode(t)) for t in workload(TRAJECTORIES, "b")]
    warm_up([(t.trajectory_id, encode(t)) for t in workload(20, "w")], workdir / "w.duckdb")
    bs, _ = batches(values, PER_BATCH)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in VARIANTS}
    try:
        for r in range(ROUNDS):
            for name, (tables, sink) in VARIANTS.items():
                schema.TABLES.update(tables)
                runs[name].append(measure(bs, workdir / f"{name}{r}.duckdb", sink))
    finally:
        schema.TABLES.update(SHIPPED)
    best = {name: max(rs, key=lambda m: m["steps_per_s"]) for name, rs in runs.items()}
    shipped = best["shipped"]["steps_per_s"]
    result = {
        "bench": "sink_phases",
        "steps": TRAJECTORIES * STEPS,
        **{
            f"{name}_{k}": round(v) if k == "steps_per_s" else round(v, 3 if k.endswith("_s") else 1)
            for name, m in best.items()
            for k, v in m.items()
        },
        "speedup_vs_row_groups_default": round(shipped / best["row_groups_default"]["steps_per_s"], 2),
        "speedup_vs_auto_compression": round(shipped / best["auto_compression"]["steps_per_s"], 2),
        "target_steps_per_s": 50_000,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
