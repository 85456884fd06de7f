"""``sluice otel-export``: the audited trajectories topic → OTLP/HTTP, at least once.

Reads ``trajectories.audited`` (redacted content only; never a raw topic) in its own consumer group,
turns each trajectory version into spans (``spans.py``) and sends them with the OpenTelemetry SDK's
OTLP/HTTP exporter. Offsets are committed only after the receiver accepted the batch; while it is
unreachable the exporter retries with backoff and consumes nothing more. Spans already sent by this
process are not sent again when a later version of the trajectory re-lists its steps (and receivers
deduplicate by span id when a restart does). A version whose steps travel by reference gets them from
the step records read before it (``sluice.trajectory_refs.StepCache``).

    sluice otel-export --config infra/sluice.yaml
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import OrderedDict

from confluent_kafka import Consumer, KafkaError
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from pydantic import ValidationError

from pipeline.otel_export.config import OtelExportConfig
from pipeline.otel_export.spans import trajectory_spans
from sluice.broker_config import BrokerConfig
from sluice.events import Trajectory, TrajectoryStep, decode
from sluice.topics_config import TopicsConfig
from sluice.trajectory_refs import StepCache, StepsMissing

log = logging.getLogger("sluice.otel_export")
SENT_MEMORY = 100_000  # span ids remembered (about 1.6 MB)


class TrajectorySpanExporter:
    """Builds and sends spans; remembers which it sent so later versions send only what is new."""

    def __init__(self, cfg: OtelExportConfig) -> None:
        self.cfg = cfg
        self.resource = Resource.create(
            {"service.name": cfg.service_name, "telemetry.sdk.name": "opentelemetry"}
        )
        self.exporter = OTLPSpanExporter(
            endpoint=cfg.endpoint,
            headers={k: v.get_secret_value() for k, v in cfg.headers.items()},
            timeout=cfg.timeout_s,
        )
        self._sent: OrderedDict[tuple[int, int], None] = OrderedDict()
        self.spans_sent = 0

    def spans_for(self, trajectories: list[Trajectory]) -> list[ReadableSpan]:
        out = []
        for traj in trajectories:
            for span in trajectory_spans(traj, self.resource, self.cfg.content):
                key = (span.context.trace_id, span.context.span_id)
                versioned = span.name.startswith("sluice.version") or span.parent is None
                if key in self._sent and not versioned:
                    continue  # a step or tool span a previous version already carried
                out.append(span)
        return out

    def send(self, spans: list[ReadableSpan], stop: threading.Event | None = None) -> bool:
        """Send until the receiver accepts (backoff up to ``retry_max_s``); False only when stopped."""
        delay = 0.5
        while spans:
            if self.exporter.export(spans) == SpanExportResult.SUCCESS:
                for span in spans:
                    self._sent[(span.context.trace_id, span.context.span_id)] = None
                while len(self._sent) > SENT_MEMORY:
                    self._sent.popitem(last=False)
                self.spans_sent += len(spans)
                return True
            log.warning(
                "OTLP receiver %s refused or unreachable; retrying in %.1fs", self.cfg.endpoint, delay
            )
            if stop is not None and stop.wait(delay):
                return False
            if stop is None:
                time.sleep(delay)
            delay = min(self.cfg.retry_max_s, delay * 2)
        return True

    def shutdown(self) -> None:
        self.exporter.shutdown()


def _inline(steps: StepCache, version: Trajectory) -> Trajectory:
    """The version with its steps; without them (read from after their records) its own spans only."""
    try:
        return steps.resolve(version)
    except StepsMissing as err:
        log.warning("exporting %s without its steps: %s", version.event_id, err)
        return version


def run_export(
    cfg: OtelExportConfig, broker: BrokerConfig, topics: TopicsConfig, stop: threading.Event
) -> None:
    """Consume the audited topic and export until ``stop`` is set."""
    consumer = Consumer(
        broker.consumer_config(
            topics.prefix + cfg.group_id, **{"client.id": f"sluice-otel-{uuid.uuid4().hex[:6]}"}
        )
    )
    consumer.subscribe([topics.name("trajectories_audited")])
    exporter = TrajectorySpanExporter(cfg)
    steps = StepCache()
    log.info("sluice otel-export ready: %s -> %s", topics.name("trajectories_audited"), cfg.endpoint)
    try:
        while not stop.is_set():
            msgs = consumer.consume(cfg.batch_max, timeout=0.5)
            if not msgs:
                continue
            trajectories = []
            for m in msgs:
                if m.error() is not None:
                    if m.error().code() != KafkaError._PARTITION_EOF:
                        log.warning("consume error: %s", m.error())
                    continue
                try:
                    event = decode(m.value() or b"")
                except ValidationError as err:  # the sink dead-letters these; here they are skipped
                    log.warning("skipping a record that is not a trajectory (offset %s): %s", m.offset(), err)
                    continue
                if isinstance(event, TrajectoryStep):
                    steps.add(event)  # before the version that references it, on the same partition
                elif isinstance(event, Trajectory):
                    trajectories.append(_inline(steps, event))
                else:
                    log.warning("skipping a %s record (offset %s)", event.event_type, m.offset())
            if not exporter.send(exporter.spans_for(trajectories), stop):
                break  # stopped while the receiver was down: nothing committed, sent again next start
            consumer.commit(asynchronous=False)
            log.info(
                "exported %d trajectory versions (%d spans in all)", len(trajectories), exporter.spans_sent
            )
    finally:
        consumer.close()
        exporter.shutdown()
