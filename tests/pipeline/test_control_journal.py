"""The control journal: the embedded broker's control topics survive a restart of the broker (real Tansu,
stopped and started again on the same port: a new, empty cluster)."""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from infra.broker import LocalBroker
from pipeline.control_journal import ControlJournal, read_journal
from pipeline.stages.names import app_id
from pipeline.topics import create_topics
from tests.conftest import make_config


def _wait(check, what: str, timeout_s: float = 30.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _read(cfg, logical: str) -> list[tuple[int, bytes | None, bytes | None]]:  # noqa: ANN001
    topic = cfg.topics.name(logical)
    consumer = Consumer(cfg.broker.consumer_config("journal-check", **{"enable.partition.eof": True}))
    out: list[tuple[int, bytes | None, bytes | None]] = []
    try:
        for p in range(cfg.topics.partitions):
            consumer.assign([TopicPartition(topic, p, 0)])
            while True:
                msg = consumer.poll(10)
                assert msg is not None
                if msg.error() is not None:
                    break
                out.append((p, msg.key(), msg.value()))
    finally:
        consumer.close()
    return out


def test_control_topics_are_replayed_into_a_new_broker_and_processed_erasures_are_not(tmp_path: Path) -> None:
    with LocalBroker(log_path=tmp_path / "tansu.log") as broker:
        cfg = make_config(broker, tmp_path)
        create_topics(cfg.broker, cfg.topics)
        journal = ControlJournal(
            cfg.broker, cfg.topics, cfg.path(cfg.up.journal_dir), app_id(cfg.topics, cfg.stages)
        )
        journal.start()
        producer = Producer(cfg.broker.producer_config())
        sent = {
            "ledger": [(0, b"p1", b'{"entry": 1}'), (1, b"p2", b'{"entry": 2}'), (0, b"p1", b'{"entry": 3}')],
            "overlays": [(1, b"acme/*", b'{"overlay": "o1"}')],
            "erasure": [
                (0, b"acme~t1", b'{"e": 1}'),
                (0, b"acme~t2", b'{"e": 2}'),
                (0, None, b'{"e": "tenant"}'),
            ],
        }
        for logical, records in sent.items():
            for partition, key, value in records:
                producer.produce(cfg.topics.name(logical), key=key, value=value, partition=partition)
        assert producer.flush(10) == 0
        # the stages processed the first two erasure requests
        stages = Consumer(cfg.broker.consumer_config(app_id(cfg.topics, cfg.stages)))
        stages.commit(offsets=[TopicPartition(cfg.topics.name("erasure"), 0, 2)], asynchronous=False)
        stages.close()
        _wait(
            lambda: (
                len(list(read_journal(journal.path("ledger")))) == 3
                and len(list(read_journal(journal.path("erasure")))) == 3
            ),
            "the journal to hold every record",
        )
        _wait(lambda: '"0": 2' in (journal.dir / "erasure.done.json").read_text()
              if (journal.dir / "erasure.done.json").exists() else False,
              "the stages' erasure offsets")  # fmt: skip
        journal.stop()
        port = broker.port

    with LocalBroker(port=port, log_path=tmp_path / "tansu2.log") as again:
        assert again.port == port
        create_topics(cfg.broker, cfg.topics)
        assert _read(cfg, "ledger") == []  # a new, empty cluster
        restored = journal.restore()
        assert restored == {"ledger": 3, "overlays": 1, "policy_events": 0, "erasure": 1}
        assert sorted(_read(cfg, "ledger")) == sorted(sent["ledger"])
        assert _read(cfg, "ledger")[:2] == [(0, b"p1", b'{"entry": 1}'), (0, b"p1", b'{"entry": 3}')]  # order
        assert _read(cfg, "overlays") == sent["overlays"]
        assert _read(cfg, "erasure") == [(0, None, b'{"e": "tenant"}')]  # only what was not processed

        # journaling the new broker rewrites the journal with its offsets, once caught up
        journal.start()
        _wait(
            lambda: [r[1] for r in read_journal(journal.path("erasure"))] == [0],
            "the journal of the new cluster",
        )
        journal.stop()
        assert (journal.dir / "cluster").read_text() == again.cluster_id
