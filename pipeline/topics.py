"""Topic administration: create the configured topics idempotently, wait for the broker.

sluice topics create
"""

from __future__ import annotations

import contextlib
import time

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from sluice.broker_config import BrokerConfig
from sluice.errors import SluiceError
from sluice.topics_config import TOPIC_KEYS, TopicsConfig


class TopicError(SluiceError):
    """Topics could not be listed or created."""


def admin_client(broker: BrokerConfig) -> AdminClient:
    # log_level 4: warnings and errors only (its info lines, e.g. BGQUEUE purges at close, are noise)
    return AdminClient(
        {"bootstrap.servers": broker.bootstrap_servers, "client.id": broker.client_id, "log_level": 4}
    )


def wait_for_broker(broker: BrokerConfig, timeout_s: float = 30.0) -> None:
    """Block until the broker answers a metadata request."""
    admin = admin_client(broker)
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            admin.list_topics(timeout=2)
            return
        except KafkaException as err:
            last = err
            time.sleep(0.2)
    raise TopicError(f"broker {broker.bootstrap_servers} not reachable within {timeout_s}s: {last}")


def existing_topics(broker: BrokerConfig) -> dict[str, int]:
    """Topic name -> partition count."""
    md = admin_client(broker).list_topics(timeout=10)
    return {name: len(t.partitions) for name, t in md.topics.items()}


def create_topics(broker: BrokerConfig, topics: TopicsConfig, timeout_s: float = 30.0) -> dict[str, str]:
    """Create every configured topic that does not exist. Returns name -> 'created' | 'exists'.

    An existing topic with a different partition count is an error: joins need co-partitioned topics.
    """
    wait_for_broker(broker, timeout_s)
    have = existing_topics(broker)
    result: dict[str, str] = {}
    wanted: list[NewTopic] = []
    for logical in TOPIC_KEYS:
        name = topics.name(logical)
        if name in have:
            if have[name] != topics.partitions:
                raise TopicError(
                    f"topic {name} has {have[name]} partitions, config says {topics.partitions}: "
                    "keyed topics must share one partition count"
                )
            result[name] = "exists"
            continue
        wanted.append(
            NewTopic(
                name,
                num_partitions=topics.partitions,
                replication_factor=topics.replication_factor,
                config=topics.topic_configs(logical) if broker.profile == "kafka" else {},
            )
        )
    if wanted:
        admin = admin_client(broker)  # keep a reference: the futures die with their client
        futures = admin.create_topics(wanted, operation_timeout=timeout_s)
        for name, fut in futures.items():
            try:
                fut.result(timeout=timeout_s)
                result[name] = "created"
            except KafkaException as err:
                if "TOPIC_ALREADY_EXISTS" in str(err):
                    result[name] = "exists"
                else:
                    raise TopicError(f"could not create {name}: {err}") from None
    return result


def delete_topics(broker: BrokerConfig, names: list[str], timeout_s: float = 30.0) -> None:
    if not names:
        return
    admin = admin_client(broker)
    futures = admin.delete_topics(names, operation_timeout=timeout_s)
    for fut in futures.values():
        with contextlib.suppress(KafkaException):
            fut.result(timeout=timeout_s)
