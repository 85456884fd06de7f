"""Where the trainer reads a train version's steps: the train topic (its step records) or the store.

Workload: audited trajectories of ``bench.sink`` (10 redacted steps each, ~1.3 KB of JSON per step), as the
join stage sends them (``bench.sink.wire_values``: each trajectory's step records, then its header). Two
ways for a reader of train versions to get every version whole, each timed from its first fetch to its
last resolved version, in this process (wall and CPU seconds):

- ``topic`` (what the trainer does): one consumer reads the topic holding step records and headers from a
  local Tansu broker; step records go into ``sluice.trajectory_refs.StepCache``, each header is resolved
  from it (count and chain digest checked).
- ``store``: the topic holds headers only (the join would not send step records), the steps are in the
  DuckDB store the sink wrote (written before timing, by the sink's own write path); each header is
  resolved by one query of its steps (``record`` by ``trajectory_id``, in step order), decoded and checked
  the same way.

``store_vs_topic_cpu`` is the store's CPU per version over the topic's. Ends with one JSON line.

    python -m bench.step_source                      # ~1 min
    python -m bench.step_source --trajectories 500   # quicker
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

from aiokafka.partitioner import murmur2
from confluent_kafka import Consumer, Producer, TopicPartition

from app.config import parse_config
from bench.kafka_load import produce_waiting
from bench.sink import STEPS, batches, open_store, wire_values, workload
from infra.broker import LocalBroker
from pipeline.topics import create_topics
from sluice.events import StepEvent, Trajectory, TrajectoryStep, decode
from sluice.step_refs import is_step_record_key, key_trajectory_id, step_digest
from sluice.trajectory_refs import StepCache, inline

PARTITIONS = 4
STEPS_SQL = "SELECT record FROM store.steps WHERE trajectory_id = ? ORDER BY step_index"


def trajectory_partition(trajectory_id: str) -> int:
    """The partition a record keyed by the trajectory id lands on (murmur2, as the pipeline's producers
    partition by key): the one its header goes to, and where the join stage sends its step records."""
    return (murmur2(trajectory_id.encode()) & 0x7FFFFFFF) % PARTITIONS


def produce(bootstrap_cfg: dict, topic: str, values: list[tuple[str, bytes]]) -> None:
    """Send each record under its own key (a step record's is ``step_record_key``) to its trajectory's
    partition, as the join stage does: a step record lands before its header, and a compacted topic would
    keep it beside the header rather than in its place."""
    producer = Producer(bootstrap_cfg)
    for key, value in values:
        produce_waiting(producer, topic, key, value, trajectory_partition(key_trajectory_id(key)))
    producer.flush(120)


def read_all(consumer_cfg: dict, topic: str, expect: int, on_record) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Wall and CPU seconds to hand every record of ``topic`` to ``on_record(key, value)`` until it has
    resolved ``expect`` versions (it returns 1 for a resolved version)."""
    consumer = Consumer(consumer_cfg)
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    resolved = 0
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        while resolved < expect:
            for msg in consumer.consume(500, 1.0):
                if msg.error() is None:
                    resolved += on_record(msg.key(), msg.value())
        return time.perf_counter() - wall, time.process_time() - cpu
    finally:
        consumer.close()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trajectories", type=int, default=3000)
    args = ap.parse_args(argv)
    n = args.trajectories
    trajs = workload(n, "t")
    refs = wire_values(trajs, "refs")
    headers = [(k, v) for k, v in refs if not is_step_record_key(k)]
    work = Path(tempfile.mkdtemp(prefix="bench-step-source-"))
    store = open_store(work / "store.duckdb")
    for b in batches(refs, 500 * (STEPS + 1))[0]:
        store.write(b, "bench")
    store.checkpoint()
    with LocalBroker(log_path=work / "tansu.log") as broker:
        cfg = parse_config(
            {
                "broker": {"bootstrap_servers": broker.bootstrap_servers, "embedded": False},
                "topics": {"prefix": f"ss{uuid.uuid4().hex[:6]}.", "partitions": PARTITIONS},
            },
            base_dir=work,
        )
        create_topics(cfg.broker, cfg.topics)
        with_steps, headers_only = (
            cfg.topics.name("trajectories_train"),
            cfg.topics.name("trajectories_audited"),
        )
        produce(cfg.broker.producer_config(), with_steps, refs)
        produce(cfg.broker.producer_config(), headers_only, headers)

        cache = StepCache()

        def from_topic(key: bytes, value: bytes) -> int:
            event = decode(value)
            if isinstance(event, TrajectoryStep):
                cache.add(event)
                return 0
            assert isinstance(event, Trajectory)
            assert len(cache.resolve(event).steps) == STEPS
            return 1

        cursor = store.cursor()

        def from_store(key: bytes, value: bytes) -> int:
            header = decode(value)
            assert isinstance(header, Trajectory)
            rows = cursor.execute(STEPS_SQL, [header.trajectory_id]).fetchall()
            held: list[tuple[StepEvent, str]] = []
            for (record,) in rows:
                step = StepEvent.model_validate_json(record)
                held.append((step, step_digest(record.encode())))
            assert len(inline(header, held).steps) == STEPS
            return 1

        consumer_cfg = cfg.broker.consumer_config(f"bench-{uuid.uuid4().hex[:6]}")
        results = {}
        for name, topic, fn in (("topic", with_steps, from_topic), ("store", headers_only, from_store)):
            wall, cpu = read_all(consumer_cfg, topic, n, fn)
            results[name] = (wall, cpu)
            print(f"{name}: {n / wall:,.0f} versions/s, {cpu / n * 1e6:,.0f} CPU us/version", file=sys.stderr)
    store.close()
    (tw, tc), (sw, sc) = results["topic"], results["store"]
    out = {
        "bench": "step_source",
        "trajectories": n,
        "steps_per_trajectory": STEPS,
        "topic_versions_per_s": round(n / tw, 1),
        "topic_cpu_us_per_version": round(tc / n * 1e6, 1),
        "store_versions_per_s": round(n / sw, 1),
        "store_cpu_us_per_version": round(sc / n * 1e6, 1),
        "store_vs_topic_cpu": round(sc / tc, 2),
        "store_vs_topic_wall": round(sw / tw, 2),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
