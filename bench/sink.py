"""DuckDB sink throughput: the Arrow write path vs row-at-a-time inserts, and topic -> DuckDB end to end.

Workload: synthetic audited trajectories (``testing.samples``: 10 redacted steps each, token ids,
logprobs, redaction reports; ~1.3 KB of JSON per step). Three measurements in one run:

- ``arrow``: batches already decoded and flattened (``PendingBatch``) written with ``DuckDBStore.write``:
  Arrow tables registered and upserted with one ``INSERT ... SELECT`` per table, offsets in the same
  transaction, commit; a final CHECKPOINT is included so deferred work is paid for.
- ``rowwise`` (baseline): the same rows into the same schema with ``executemany`` of one
  ``INSERT ... VALUES (?, ...) ON CONFLICT DO NOTHING`` per row, one transaction per batch.
- ``e2e``: records pre-produced to a local Tansu broker the benchmark starts (produce not timed); the sink
  loop (manual assignment, default batch settings) runs until every record is committed to DuckDB and
  the count is queryable. Decode and flatten are included here (``e2e_rows_per_s``, target 30,000
  steps/s: records decoded once, step JSON stored as received, inserts overlapping the next decode).

Besides, ``decode_costs``: microseconds per step to validate a record with the mirrored types, to
receive it (validate and cut out its steps' bytes), to parse it with no schema, and to validate it into
the model (what bounds decoding: building objects, or checking them).

Rates are step rows per wall-clock second (``all_rows_per_s``: rows of every table; ``rows_per_cpu_s``:
per CPU second of this process, which a shared machine disturbs less). Ends with one JSON line.

Records are those the join stage sends now (``--layout refs``: each trajectory's step records, then its
header referencing them); ``--layout inline`` sends one record per version with its steps, as it did
before versions referenced their steps (the sink still reads both).

    python -m bench.sink                        # ~2 min
    python -m bench.sink --trajectories 5000    # quicker
    python -m bench.sink --layout inline        # the records of the inline layout
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Callable
from pathlib import Path

import msgspec
from confluent_kafka import Producer

from app.config import SluiceConfig, parse_config
from bench.kafka_load import produce_waiting
from governance.reward_join.step_refs import on_topic, step_payloads
from infra.broker import LocalBroker
from pipeline.topics import create_topics
from sinks.arrow_tables import columns, gc_paused
from sinks.batch import BatchTopics, PendingBatch
from sinks.config import SinkConfig
from sinks.flatten import SourceRecord
from sinks.ingest import SinkRunner
from sinks.received import receive_trajectory
from sinks.store import DuckDBStore, connect, stored_columns
from sinks.wire_mirror import wire_mirror
from sluice.events import Trajectory, encode
from sluice.step_refs import step_record_key
from testing.samples import make_trajectory

TARGETS = {"rows_per_s": 50_000, "speedup_vs_rowwise": 10.0, "e2e_rows_per_s": 30_000}
STEPS = 10
ROWS_PER_TRAJECTORY = STEPS + 2  # its steps, its version row, its reward
POLL_RECORDS = 500  # records the sink takes per poll at most (``sinks.ingest``)


def open_store(db: Path) -> DuckDBStore:
    """A store with the sink's default settings (what ``sluice sink`` runs with)."""
    return DuckDBStore.for_sink(db, SinkConfig())


def workload(n: int, seed: str) -> list[Trajectory]:
    """``n`` distinct trajectories built from one template (building each from scratch is slow)."""
    base = make_trajectory("template", n_steps=STEPS, reward=1.0, session_id="s")
    out = []
    for i in range(n):
        tid = f"{seed}-{i:07d}"
        steps = [
            s.model_copy(update={"trajectory_id": tid, "event_id": f"{tid}-s{s.step_index}"})
            for s in base.steps
        ]
        rewards = [r.model_copy(update={"reward_id": f"{tid}-r"}) for r in base.rewards]
        out.append(
            base.model_copy(
                update={
                    "trajectory_id": tid,
                    "event_id": f"{tid}:v1",
                    "tenant": ("acme", "globex", "initech")[i % 3],
                    "steps": steps,
                    "rewards": rewards,
                }
            )
        )
    return out


def wire_values(trajs: list[Trajectory], layout: str) -> list[tuple[str, bytes]]:
    """``(key, value)`` records as the join stage sends them: ``refs`` (layout 2.0, what it sends now) is
    each trajectory's step records then its header, ``inline`` (layout 1.0) one record with the steps."""
    if layout == "inline":
        return [(t.trajectory_id, encode(t)) for t in trajs]
    out: list[tuple[str, bytes]] = []
    for t in trajs:
        emitted = on_topic(t, {}, step_payloads(t, {}))
        out += [(step_record_key(t.trajectory_id, e), record) for e, record in emitted.step_records]
        out.append((t.trajectory_id, encode(emitted.header)))
    return out


def batches(values: list[tuple[str, bytes]], per_batch: int) -> tuple[list[PendingBatch], float]:
    """Decode and flatten into batches, filed as the sink files them (``add_all`` per poll of up to
    ``POLL_RECORDS``); returns them and the seconds it took."""
    topics = BatchTopics("audited", "deadletter")
    out = []
    started = time.perf_counter()
    for start in range(0, len(values), per_batch):
        b = PendingBatch(topics)
        recs = [
            SourceRecord("audited", 0, off, key, value)
            for off, (key, value) in enumerate(values[start : start + per_batch], start)
        ]
        for poll in range(0, len(recs), POLL_RECORDS):
            b.add_all(recs[poll : poll + POLL_RECORDS])
        out.append(b)
    return out, time.perf_counter() - started


def total_rows(bs: list[PendingBatch]) -> int:
    return sum(b.rows for b in bs)


def warm_up(values: list[tuple[str, bytes]], db: Path) -> None:
    """One small write first, so one-time costs (pyarrow and DuckDB initialisation) are not timed."""
    store = open_store(db)
    store.write(batches(values[:20], 20)[0][0], "warm")
    store.close()


def bench_arrow(bs: list[PendingBatch], db: Path) -> tuple[float, float]:
    """Wall seconds and CPU seconds (this process, DuckDB's threads included) to write every batch."""
    db.unlink(missing_ok=True)
    store = open_store(db)
    started, cpu = time.perf_counter(), time.process_time()
    for b in bs:
        store.write(b, "bench")
    store.checkpoint()
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    store.close()
    return elapsed, cpu


# What storing a field as a column buys at query time: one aggregate over every step, on a stored column
# and on a field the steps view reads from the step record (``sinks.views.STEP_RECORD_FIELDS``).
QUERIES = {
    "query_stored_column_ms": "SELECT request_model, sum(input_tokens) FROM steps GROUP BY 1",
    "query_record_field_ms": "SELECT operation, count(*) FROM steps GROUP BY 1",
}


def bench_queries(db: Path) -> dict[str, float]:
    """Milliseconds per query of ``QUERIES`` on the written store (best of three, read-only)."""
    con = connect(db, read_only=True)
    try:
        out = {}
        for name, sql in QUERIES.items():
            runs = []
            for _ in range(3):
                t0 = time.perf_counter()
                con.execute(sql).fetchall()
                runs.append(time.perf_counter() - t0)
            out[name] = round(min(runs) * 1e3, 1)
        return out
    finally:
        con.close()


def bench_rowwise(bs: list[PendingBatch], db: Path) -> float:
    store = open_store(db)
    con = store.con
    started = time.perf_counter()
    for b in bs:
        con.execute("BEGIN TRANSACTION").fetchall()
        for table, rows in b.tables.items():
            if not rows:
                continue
            cols = columns(table)
            stored = stored_columns(table)  # as the Arrow path: computed columns filled by DuckDB
            names = ", ".join(f'"{c}"' for c in stored)
            row = ", ".join(f'? AS "{c}"' for c in cols)
            sql = (
                f"INSERT INTO store.{table} ({names}) SELECT {', '.join(stored.values())} "
                f"FROM (SELECT {row}) i ON CONFLICT DO NOTHING"
            )
            con.executemany(sql, [[r[c] for c in cols] for r in rows.values()])
        con.execute("COMMIT").fetchall()
    store.checkpoint()
    elapsed = time.perf_counter() - started
    store.close()
    return elapsed


def bench_e2e(
    values: list[tuple[str, bytes]], trajectories: int, workdir: Path
) -> tuple[float, float, int, int]:
    """Wall and CPU seconds (this process, all its threads) from the sink's first poll until every
    produced record is committed and counted, and the trajectories and steps then queryable."""
    with LocalBroker(log_path=workdir / "tansu.log") as broker:
        cfg: SluiceConfig = parse_config(
            {
                "broker": {"bootstrap_servers": broker.bootstrap_servers, "embedded": False},
                "topics": {"prefix": f"bench{uuid.uuid4().hex[:6]}.", "partitions": 4},
                "sink": {"database": str(workdir / "e2e.duckdb"), "query_port": 0, "assignment": "manual"},
            },
            base_dir=workdir,
        )
        create_topics(cfg.broker, cfg.topics)
        topic = cfg.topics.name("trajectories_audited")
        producer = Producer(cfg.broker.producer_config())
        for key, value in values:
            produce_waiting(producer, topic, key, value)
        producer.flush(120)
        runner = SinkRunner(cfg.sink_settings())
        runner.start()
        started, cpu = time.perf_counter(), time.process_time()
        want = len(values)
        while True:
            runner.step()
            # the runner's record of what DuckDB committed (one query per turn would cost as much as a
            # turn's decode); the store itself is queried once at the end
            if sum(o for (t, _), o in runner.committed_offsets().items() if t == topic) >= want:
                break
        stored = sum(o for (t, _), o in runner.store.stored_offsets(cfg.sink.group_id).items() if t == topic)
        count = runner.store.con.execute("SELECT count(*) FROM trajectories").fetchone()[0]
        steps = runner.store.con.execute("SELECT count(*) FROM steps").fetchone()[0]
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        runner.stop()
        runner.shutdown()
    if count != trajectories or steps != trajectories * STEPS or stored != want:
        raise SystemExit(
            f"e2e: {count} trajectories, {steps} steps queryable, {stored} of {want} records' offsets "
            f"stored; expected {trajectories} trajectories"
        )
    return elapsed, cpu, count, steps


def decode_costs(values: list[tuple[str, bytes]]) -> dict[str, float]:
    """Microseconds per step, collector off (as the sink decodes), best of three passes: the sink's
    validation (the types mirrored from the models, ``sinks.wire_mirror``), that plus cutting out each
    step's bytes (``receive_trajectory``: what the sink does per record), the same bytes parsed without
    any schema (``msgspec.json.decode``), and the model's own ``validate_json``. Tells what bounds
    decoding: building the Python objects or checking them."""
    decoders = wire_mirror()
    assert decoders is not None
    raw = [v for _, v in values]
    steps = len(raw) * STEPS

    def validate(value: bytes) -> list[object]:
        return [decoders.step.decode(s) for s in decoders.header.decode(value).steps]

    def best(fn: Callable[[bytes], object]) -> float:
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            for v in raw:
                fn(v)
            times.append(time.perf_counter() - t0)
        return round(min(times) / steps * 1e6, 2)

    with gc_paused():
        return {
            "validate_us_per_step": best(validate),
            "receive_us_per_step": best(receive_trajectory),
            "parse_only_us_per_step": best(msgspec.json.decode),
            "model_validate_us_per_step": best(Trajectory.model_validate_json),
        }


def batch_memory(values: list[tuple[str, bytes]], per_batch: int) -> tuple[float, int]:
    """Bytes one batch holds at its peak (pending rows while it converts, plus its Arrow tables), and
    its rows. Python objects by tracemalloc; Arrow buffers (its own allocator) by their size."""
    tracemalloc.start()
    try:
        (b,), _ = batches(values[:per_batch], per_batch)
        tables = b.arrow_tables()
        _, python_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return python_peak + sum(t.nbytes for t in tables.values()), b.rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trajectories", type=int, default=30_000, help="For the Arrow path and end to end.")
    ap.add_argument("--rowwise-trajectories", type=int, default=50, help="Baseline sample (it is slow).")
    ap.add_argument(
        "--batch",
        type=int,
        default=SinkConfig().batch_max_rows // ROWS_PER_TRAJECTORY,
        help="Trajectories per batch (default: what fills the sink's default batch_max_rows).",
    )
    ap.add_argument(
        "--layout",
        choices=["refs", "inline"],
        default="refs",
        help="Records as the join sends them now (refs: step records, then a header) or as it did (inline).",
    )
    args = ap.parse_args(argv)
    per_trajectory = 1 if args.layout == "inline" else STEPS + 1  # records

    workdir = Path(tempfile.mkdtemp(prefix="bench-sink-"))
    trajs = workload(args.trajectories, "b")
    values = wire_values(trajs, args.layout)
    warm_up(wire_values(workload(20, "w"), args.layout), workdir / "w.duckdb")
    per_batch = args.batch * per_trajectory
    batch_bytes, batch_rows = batch_memory(values, per_batch)
    bs, decode_s = batches(values, per_batch)
    costs = decode_costs(wire_values(trajs[:2000], "inline"))
    steps = args.trajectories * STEPS
    arrow_s, arrow_cpu_s = bench_arrow(bs, workdir / "arrow.duckdb")
    queries = bench_queries(workdir / "arrow.duckdb")
    sample, _ = batches(values[: args.rowwise_trajectories * per_trajectory], per_batch)
    rowwise_s = bench_rowwise(sample, workdir / "rowwise.duckdb")
    rowwise_steps = args.rowwise_trajectories * STEPS
    all_rows = total_rows(bs)
    # A sink process holds none of the benchmark's objects: drop them, so that the garbage collector does
    # not walk millions of them during the end-to-end run.
    del trajs, values, bs, sample
    gc.collect()
    e2e_values = wire_values(workload(args.trajectories, "e"), args.layout)
    e2e_s, e2e_cpu_s, e2e_count, e2e_steps = bench_e2e(e2e_values, args.trajectories, workdir)

    rows_per_s = steps / arrow_s
    rowwise_per_s = rowwise_steps / rowwise_s
    result = {
        "bench": "sink",
        "trajectories": args.trajectories,
        "layout": args.layout,
        "steps": steps,
        "batch_trajectories": args.batch,
        "rows_per_s": round(rows_per_s),
        "all_rows_per_s": round(all_rows / arrow_s),
        "rows_per_cpu_s": round(steps / arrow_cpu_s),
        "rowwise_rows_per_s": round(rowwise_per_s),
        "speedup_vs_rowwise": round(rows_per_s / rowwise_per_s, 1),
        "decode_flatten_rows_per_s": round(steps / decode_s),
        **costs,
        "db_mb": round((workdir / "arrow.duckdb").stat().st_size / 1e6, 1),
        "batch_rows": batch_rows,
        "batch_peak_mb": round(batch_bytes / 1e6, 1),
        "bytes_per_pending_row": round(batch_bytes / batch_rows),
        **queries,
        "e2e_rows_per_s": round(e2e_steps / e2e_s),
        "e2e_trajectories_per_s": round(e2e_count / e2e_s),
        "e2e_seconds": round(e2e_s, 2),
        "e2e_rows_per_cpu_s": round(e2e_steps / e2e_cpu_s),
        "targets": TARGETS,
        "met": {
            "rows_per_s": rows_per_s >= TARGETS["rows_per_s"],
            "speedup_vs_rowwise": rows_per_s / rowwise_per_s >= TARGETS["speedup_vs_rowwise"],
            "e2e_rows_per_s": e2e_steps / e2e_s >= TARGETS["e2e_rows_per_s"],
        },
    }
    print(
        f"arrow path: {rows_per_s:,.0f} steps/s ({result['all_rows_per_s']:,} rows/s, all tables) | "
        f"row-at-a-time: {rowwise_per_s:,.0f} steps/s | x{result['speedup_vs_rowwise']} | "
        f"decode+flatten: {result['decode_flatten_rows_per_s']:,} steps/s | "
        f"topic->DuckDB: {result['e2e_rows_per_s']:,} steps/s ({e2e_count} trajectories in {e2e_s:.1f}s)",
        file=sys.stderr,
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
