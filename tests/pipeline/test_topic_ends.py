"""End offsets on the real broker when record batches hold many records (Tansu's ListOffsets falls short)."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from infra.broker import LocalBroker
from pipeline.topic_ends import TopicEnds, end_offsets, watermarks
from sluice.broker_config import BrokerConfig


def _topic(broker: LocalBroker, partitions: int) -> str:
    name = f"ends-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(10)
    return name


def _produce_batches(broker: LocalBroker, topic: str, partition: int, sizes: list[int]) -> None:
    """Each entry of ``sizes`` becomes one record batch of that many records (one flush each)."""
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 50})
    for n, size in enumerate(sizes):
        for i in range(size):
            producer.produce(topic, key=b"k", value=f"{n}.{i}".encode(), partition=partition)
        assert producer.flush(10) == 0


def _listed(broker: LocalBroker, topic: str, partition: int) -> int:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "ends-listed"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1]
    finally:
        consumer.close()


def test_ends_count_every_record_of_multi_record_batches(broker: LocalBroker) -> None:
    topic = _topic(broker, 3)
    _produce_batches(broker, topic, 0, [6, 1, 4])
    _produce_batches(broker, topic, 1, [1, 1])
    tansu = BrokerConfig(bootstrap_servers=broker.bootstrap_servers, profile="tansu", embedded=False)
    assert _listed(broker, topic, 0) < 11  # the broker's own answer is short: why the fetch is needed
    assert watermarks(tansu, [(topic, 0), (topic, 1), (topic, 2)]) == {
        (topic, 0): (0, 11),
        (topic, 1): (0, 2),
        (topic, 2): (0, 0),
    }
    _produce_batches(broker, topic, 2, [3])
    assert end_offsets(tansu, [(topic, 2), (topic, 2)]) == {(topic, 2): 3}
    # the kafka profile trusts ListOffsets (right on Kafka), so here it shows the short answer
    kafka = tansu.model_copy(update={"profile": "kafka"})
    assert end_offsets(kafka, [(topic, 0)]) == {(topic, 0): _listed(broker, topic, 0)}
    assert end_offsets(tansu, []) == {}


def test_one_probe_answers_again_as_partitions_grow(broker: LocalBroker) -> None:
    """A reader that asks again and again (a benchmark that polls) keeps one probe: each answer is the end
    at that moment, whatever the earlier assignments left behind."""
    topic = _topic(broker, 2)
    tansu = BrokerConfig(bootstrap_servers=broker.bootstrap_servers, profile="tansu", embedded=False)
    parts = [(topic, 0), (topic, 1)]
    with TopicEnds(tansu, timeout_s=10) as ends:
        assert ends.end_offsets(parts) == {(topic, 0): 0, (topic, 1): 0}
        expected = {(topic, 0): 0, (topic, 1): 0}
        for round_, sizes in enumerate([[5], [1, 7], [2, 2, 2]]):
            tp = parts[round_ % 2]
            _produce_batches(broker, topic, tp[1], sizes)
            expected[tp] += sum(sizes)
            assert ends.end_offsets(parts) == expected
            assert ends.end_offsets([tp]) == {tp: expected[tp]}
        assert ends.watermarks(parts) == {tp: (0, high) for tp, high in expected.items()}


def test_a_partition_the_broker_does_not_have_is_an_error(broker: LocalBroker) -> None:
    tansu = BrokerConfig(bootstrap_servers=broker.bootstrap_servers, profile="tansu", embedded=False)
    with pytest.raises(KafkaException):
        end_offsets(tansu, [(f"absent-{uuid.uuid4().hex[:8]}", 0)], timeout_s=2)
