"""Record every version a policy server starts serving (load, update, rollback) as a ``PolicyEvent``: one
JSON line in the server's log file (always; DuckDB reads it with ``read_json``) and one record on the
policy-events topic (best effort: a broker outage never fails a weight swap, it only logs a warning).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from sluice.broker_config import BrokerConfig
from sluice.events import PolicyEvent, encode

log = logging.getLogger(__name__)


class PolicyEventRecorder:
    def __init__(self, log_path: Path | None, broker: BrokerConfig | None = None, topic: str = "") -> None:
        self.log_path = log_path
        self.topic = topic
        self._lock = threading.Lock()
        self._producer = None
        if broker is not None and topic:
            from confluent_kafka import Producer

            from pipeline.proxy.publishing.rdkafka_log import rdkafka_logger

            conf = broker.producer_config(
                **{
                    "message.timeout.ms": 30_000,
                    "allow.auto.create.topics": False,  # `sluice topics create` makes it, partitioned
                    "logger": rdkafka_logger("sluice.serve.rdkafka"),
                }
            )
            self._producer = Producer(conf)
        if log_path is not None:
            log_path.parent.mkdir(parents=True, exist_ok=True)

    def record(self, event: PolicyEvent) -> None:
        data = encode(event)
        if self.log_path is not None:
            with self._lock, self.log_path.open("ab") as f:
                f.write(data + b"\n")
        if self._producer is not None:
            try:
                self._producer.produce(
                    self.topic, key=event.server.encode(), value=data, on_delivery=_delivered
                )
                self._producer.poll(0)
            except Exception as err:  # BufferError, KafkaException: the swap stands, the record is in the log
                log.warning("policy event %s not published: %s", event.event_id, err)

    def close(self, timeout_s: float = 5.0) -> None:
        if self._producer is not None:
            left = self._producer.flush(timeout_s)
            if left:
                log.warning(
                    "%d policy event(s) not published before shutdown (they are in the log file)", left
                )


def _delivered(err, msg) -> None:  # noqa: ANN001 - confluent's callback signature
    if err is not None:
        log.warning("policy event not published: %s", err)


def read_events(path: Path) -> list[PolicyEvent]:
    """Every event a server logged, oldest first (a torn last line from a crash is skipped)."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(PolicyEvent.model_validate_json(line))
        except ValueError:
            continue
    return out
