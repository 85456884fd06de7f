"""What the embedded broker (Tansu, memory storage) spends per request: produce and fetch, CPU from /proc.

The pipeline's broker CPU is set by how many requests the services make, not by how many bytes they move.
Three measurements on one fresh broker (``infra.broker.LocalBroker``), each against its own baseline:

- ``produce``: N records of 1.5 KB, one record per batch (the tansu profile) vs normal batching
  (``batch.num.messages`` default): broker CPU ms per record, and the ratio.
- ``fetch``: a consumer with nothing to read, assigned 1 partition vs 16 (what a stage worker alone on
  four topics of four partitions reads), waiting ``fetch.wait.max.ms`` 50 (``broker.fetch_max_wait_ms``)
  vs 250 ms: broker CPU ms per fetch request (librdkafka's own request count) and share of a core.

    python -m bench.broker_cost          # ~1 min
"""

from __future__ import annotations

import json
import time
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.kafka_load import produce_waiting
from bench.proxy import cpu_seconds
from infra.broker import LocalBroker

TOPICS = ("a", "b", "c", "d")
PARTITIONS = 4
RECORDS = 5_000
FETCH_SECONDS = 10.0


def produce_cost(broker: LocalBroker, topic: str, one_per_batch: bool) -> float:
    """Broker CPU ms per record for ``RECORDS`` records."""
    conf: dict[str, Any] = {"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 2}
    if one_per_batch:
        conf["batch.num.messages"] = 1
    producer = Producer(conf)
    assert broker._proc is not None
    cpu0 = cpu_seconds(broker._proc.pid)
    for i in range(RECORDS):
        produce_waiting(producer, topic, str(i).encode(), b"x" * 1500)
    producer.flush(60)
    return (cpu_seconds(broker._proc.pid) - cpu0) * 1000 / RECORDS


def fetch_cost(broker: LocalBroker, partitions: int, wait_ms: int) -> dict[str, float]:
    """Broker CPU per fetch request of a consumer that finds nothing to read."""
    stats: dict[str, Any] = {}
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"cost-{partitions}-{wait_ms}",
            "fetch.wait.max.ms": wait_ms,
            "auto.offset.reset": "latest",
            "statistics.interval.ms": 500,
            "stats_cb": lambda s: stats.update(json.loads(s)),
        }
    )
    consumer.assign([TopicPartition(t, p) for t in TOPICS for p in range(PARTITIONS)][:partitions])

    def requests() -> int:
        return sum(b.get("tx", 0) for b in stats.get("brokers", {}).values())

    def poll_for(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            consumer.poll(0.1)

    assert broker._proc is not None
    poll_for(2.0)  # settle: connections, first offsets
    cpu0, req0 = cpu_seconds(broker._proc.pid), requests()
    poll_for(FETCH_SECONDS)
    poll_for(0.6)  # one more statistics callback covers the window
    cpu, req = cpu_seconds(broker._proc.pid) - cpu0, requests() - req0
    consumer.close()
    return {
        "ms_per_request": round(cpu * 1000 / max(1, req), 2),
        "core_share": round(cpu / FETCH_SECONDS, 3),
        "requests_per_s": round(req / FETCH_SECONDS, 1),
    }


def main() -> None:
    with LocalBroker() as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        for topic in (*TOPICS, "single", "batched"):
            admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
        single = produce_cost(broker, "single", one_per_batch=True)
        batched = produce_cost(broker, "batched", one_per_batch=False)
        fetch = {f"{n}p_{w}ms": fetch_cost(broker, n, w) for n, w in ((1, 50), (16, 50), (16, 250))}
    result = {
        "bench": "broker_cost",
        "records": RECORDS,
        "produce_ms_per_record_one_per_batch": round(single, 4),
        "produce_ms_per_record_batched": round(batched, 4),
        "produce_one_per_batch_vs_batched": round(single / batched, 2) if batched else None,
        "fetch_idle": fetch,
        "fetch_16p_vs_1p_per_request": round(
            fetch["16p_50ms"]["ms_per_request"] / max(0.01, fetch["1p_50ms"]["ms_per_request"]), 2
        ),
        "fetch_core_share_50ms_vs_250ms": round(
            fetch["16p_50ms"]["core_share"] / max(0.001, fetch["16p_250ms"]["core_share"]), 2
        ),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
