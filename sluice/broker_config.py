"""Where Kafka is and which broker's quirks to work around: ``BrokerConfig``, shared by every service.

Broker quirks live in one place, ``BrokerConfig.profile`` (``tansu`` for the embedded local broker, ``kafka``
for a real cluster), from which the producer, consumer and Faust settings are derived rather than asked for.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from sluice.frozen import Frozen


class BrokerConfig(Frozen):
    """Where Kafka is, and which broker's quirks to work around."""

    bootstrap_servers: str = Field("127.0.0.1:19092", description="host:port[,host:port...]")
    profile: Literal["tansu", "kafka"] = Field(
        "tansu",
        description="tansu: the embedded local broker (end offsets read from fetches); kafka: a real cluster.",
    )
    embedded: bool = Field(True, description="Start the local Tansu broker (sluice up / sluice broker).")
    session_timeout_ms: int = Field(6000, ge=1000)
    fetch_max_wait_ms: int = Field(
        50, ge=1, description="tansu: how long a fetch may wait for data (Tansu answers late otherwise)."
    )
    stage_linger_ms: int = Field(
        10,
        ge=0,
        le=1000,
        description="How long a stage worker's producer waits to fill a record batch (Faust's default, 0, "
        "sends whatever is queued at once, so records a few milliseconds apart travel in separate requests).",
    )
    client_id: str = "sluice"

    @property
    def port(self) -> int:
        return int(self.bootstrap_servers.split(",")[0].rsplit(":", 1)[1])

    def producer_config(self, **overrides: Any) -> dict[str, Any]:
        """confluent-kafka producer settings: idempotent, acks=all, murmur2 like Java/aiokafka/Faust."""
        conf: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "client.id": self.client_id,
            "enable.idempotence": True,
            "acks": "all",
            "partitioner": "murmur2_random",
            "linger.ms": 2,
            "message.timeout.ms": 0,  # never give up on a message: delivery failures come from the spool
            # topics come from ``create_topics`` with one partition count; a producer that still knows a
            # topic's name must not create it on a restarted, empty broker with the broker's default count
            "allow.auto.create.topics": False,
        }
        conf.update(overrides)
        return conf

    def consumer_config(self, group_id: str, **overrides: Any) -> dict[str, Any]:
        conf: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "client.id": self.client_id,
            "group.id": group_id,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": self.session_timeout_ms,
            "heartbeat.interval.ms": max(500, self.session_timeout_ms // 6),
        }
        if self.profile == "tansu":
            conf["fetch.wait.max.ms"] = self.fetch_max_wait_ms
        conf.update(overrides)
        return conf

    def faust_settings(self) -> dict[str, Any]:
        """Settings for ``faust.App`` that keep tables correct on this broker, and batch its output."""
        # Both profiles run the stages' own transport (pipeline/stages/transport.py): its rebalance and
        # commit fixes are in the client, whatever the broker; the tansu profile adds the short fetch wait.
        scheme = f"sluice-{self.profile}"
        settings: dict[str, Any] = {
            "broker": ",".join(f"{scheme}://{s}" for s in self.bootstrap_servers.split(",")),
            "broker_session_timeout": self.session_timeout_ms / 1000,
            "broker_heartbeat_interval": max(0.5, self.session_timeout_ms / 6000),
            "table_standby_replicas": 0,
            # fewer, fuller produce requests: less broker and worker CPU per record (python -m bench.stages
            # and bench.pipeline); a commit flushes the producer, so nothing waits longer than this
            "producer_linger": self.stage_linger_ms / 1000,
        }
        return settings
