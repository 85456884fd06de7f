"""Publishing: a confluent-kafka idempotent producer, off the request path, behind a write-ahead log.

Every event is appended to the proxy's write-ahead log (``write_ahead_log.py``) when it is published; the
proxy completes a response only after ``durable()`` (the log's group commit) said everything it
published is on disk, so a proxy killed with SIGKILL loses nothing it answered for. An event is handed to
the producer at once from memory; its delivery report acknowledges it in the log, which trims itself.

Everything runs on the proxy's event loop thread: ``produce()`` never blocks (librdkafka's own threads do
the network I/O) and a pump task polls for delivery reports every few milliseconds. Departure from the
usual recipe (a poll thread): a second Python thread makes every delivery report re-acquire the GIL
against the busy event loop, which measured 2-3x the publishing cost per event; on the loop thread the
reports are served in batches with no hand-off. The blocking calls (the broker probe, the check of a
crash's tail) run in an executor thread.

Modes (per-trajectory order holds in each: records are keyed by trajectory id and leave in log order):

- direct: events go straight to the producer from memory; at most ``max_in_flight`` unacknowledged.
- draining: a delivery failed or all brokers are down. Nothing new is produced; once every in-flight
  event has reported, the publisher switches to spooling.
- spooling: new events wait in the log only; every ``probe_interval_s`` a fresh producer (fresh idempotent
  producer id: the broker may have restarted empty) checks the broker and the topics, then the log is
  replayed in order from its oldest unacknowledged record. When the replay reaches the log's end: direct.
  More than ``spool_max_memory_events`` waiting in memory also switches to replaying from the log (with
  the broker still reachable), so memory stays bounded when the broker is slower than the traffic.

On the embedded broker (topics in memory) an acknowledged record is kept in the log until it has
*landed* (``landing.py``: the stages processed it into state that outlives the broker); the landing
check runs every ``land_interval_s`` in an executor thread and also reads the cluster id. A new id is a
new, empty broker: every delivered, unlanded record is sent again, in log order, through the same
draining -> spooling -> replay path as an outage (the stages drop what they already hold by event id).

At start, an unacknowledged tail left by the last run is replayed first; if the broker acknowledged some
of it just before a crash (the cursor had not recorded it yet), ``delivery_check`` finds those on the
broker and they are not sent twice. Departure from the Kafka defaults: ``message.timeout.ms`` is finite
(``proxy.publish_timeout_ms``) so an unreachable broker is noticed; topic auto-creation is off (a topic
created by accident would get the wrong partition count); ``linger.ms`` is ``proxy.publish_linger_ms``
(5): records share produce requests on every broker profile, Tansu included. Its short ListOffsets
"latest" (``pipeline/topic_ends.py``) touches no reader of the raw topics: the stages consume them in a
group from committed offsets, the landing check reads committed offsets, and every end offset Sluice
asks for comes from a fetch's high watermark.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from functools import partial
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from pipeline.proxy.config import ProxyConfig
from pipeline.proxy.publishing.base import PublisherStats
from pipeline.proxy.publishing.commit_waits import CommitWaits
from pipeline.proxy.publishing.delivery_check import already_delivered, record_digest
from pipeline.proxy.publishing.landing import LandingReport, LandingTracker
from pipeline.proxy.publishing.rdkafka_log import rdkafka_logger
from pipeline.proxy.publishing.write_ahead_log import LogRecord, WriteAheadLog
from sluice.broker_config import BrokerConfig

log = logging.getLogger(__name__)

DIRECT, DRAINING, SPOOLING = "direct", "draining", "spooling"
TICK_BUSY_S, TICK_IDLE_S = 0.005, 0.05
# Acknowledgements are persisted (a small file written and renamed) 4 times a second: 20 times cost ~10 us
# a request at 1k requests/s. What a crash leaves unrecorded is found on the broker (``delivery_check``).
CURSOR_SAVE_S = 0.25


class KafkaPublisher:
    def __init__(
        self,
        broker: BrokerConfig,
        wal_dir: Path,
        settings: ProxyConfig,
        *,
        on_delivered: Any = None,
        landing: LandingTracker | None = None,
    ) -> None:
        """Publish to ``broker`` behind a write-ahead log in ``wal_dir``, with the proxy's publishing and
        log settings (``publish_timeout_ms``, ``spool_*``, ``wal_*``, ``probe_interval_s``,
        ``shutdown_flush_s``, ``land_interval_s``)."""
        self.broker = broker
        self.timeout_ms = settings.publish_timeout_ms
        self.linger_ms = settings.publish_linger_ms
        self.max_memory = settings.spool_max_memory_events
        self.max_in_flight = max(1, min(1000, settings.spool_max_memory_events))
        self.probe_interval_s = settings.probe_interval_s
        self.shutdown_flush_s = settings.shutdown_flush_s
        self.on_delivered = on_delivered  # callable(lag_seconds)
        # False only to measure what the wait costs (benchmarks)
        self.wait_for_log = settings.wal_before_response
        self.wal = WriteAheadLog(
            wal_dir,
            settings.spool_segment_bytes,
            settings.wal_segment_max_age_s,
            settings.wal_fsync,
            keep_until_landed=landing is not None,
        )
        self.landing = landing  # None: a record is safe once the broker holds it (a durable cluster)
        self._tracked = set(landing.raw_topics) if landing is not None else set()
        self.land_interval_s = settings.land_interval_s
        self._landing_task: asyncio.Future[LandingReport] | None = None
        self._landing_epoch = 0  # which cluster switch a running check started after
        self._cluster_switches = 0
        self._next_landing = 0.0
        self._pending: deque[LogRecord] = deque()  # direct mode: waiting for room in flight
        self._in_flight: dict[int, LogRecord] = {}  # seq -> record handed to the producer
        self._mode = DIRECT
        self._connected = False
        self._tail_to_check: list[tuple[int, str, bytes]] = []
        self._next_probe = 0.0
        self._probing: asyncio.Task[None] | None = None
        self._topics: set[str] = set()
        self._producer: Producer | None = None
        self._pump: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._idle = False
        self._closing = False
        self._delivered = 0
        self._failures = 0
        self._last_cursor_save = 0.0
        self._waits = CommitWaits()

    # ------------------------------------------------------------------ API (event loop thread)

    async def start(self) -> None:
        if self.wal.depth:
            log.info("write-ahead log holds %d unacknowledged events: replaying them first", self.wal.depth)
            self._tail_to_check = [
                (r.seq, r.topic, record_digest(r.topic, r.key, r.value)) for r in self.wal.unacked()
            ]
            self._topics.update(t for _, t, _ in self._tail_to_check)
            self._mode = SPOOLING
        self._producer = self._new_producer()
        self._pump = asyncio.create_task(self._run(), name="sluice-publisher")

    def publish(self, topic: str, key: str, value: bytes) -> None:
        rec = self.wal.append(topic, key.encode(), value, time.monotonic())
        self._topics.add(topic)
        if self._mode == DIRECT:
            if not self._pending and len(self._in_flight) < self.max_in_flight and self._produce(rec):
                return
            self._pending.append(rec)
            if len(self._pending) + len(self._in_flight) > self.max_memory:
                log.warning(
                    "more than %d events in memory: replaying the excess from the log", self.max_memory
                )
                self._pending.clear()
                self._mode, self._connected = SPOOLING, True
                self.wal.rewind()
        if self._idle:
            self._wake.set()  # the pump sleeps its long idle tick: deliveries should be served soon

    def durable(self) -> asyncio.Future[None] | None:
        """Done once every event published so far is in the write-ahead log on disk (None: already is).

        The log's group commit: one write for everything published since the last one, and with
        ``fsync`` one shared ``fdatasync`` per group. Never waits for the broker."""
        if not self.wait_for_log:
            return None
        t0 = time.perf_counter()
        waiting = self.wal.durable()
        if waiting is None:
            self._waits.observe(time.perf_counter() - t0)
        else:
            waiting.add_done_callback(lambda _: self._waits.observe(time.perf_counter() - t0))
        return waiting

    async def close(self, timeout_s: float | None = None) -> None:
        """Deliver what can be delivered within ``shutdown_flush_s``; the log keeps the rest."""
        if self._pump is None:
            return
        self._closing = True
        self._wake.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(self._pump, (timeout_s or self.shutdown_flush_s) + 10)
        self._pump = None

    def stats(self) -> PublisherStats:
        mem = len(self._pending) + len(self._in_flight)
        return PublisherStats(
            self._mode,
            len(self._in_flight),
            mem,
            self.wal.depth,
            self._delivered,
            self._failures,
            self._waits.snapshot(),
        )

    # ------------------------------------------------------------------ producer

    def _new_producer(self) -> Producer:
        conf = self.broker.producer_config(
            **{
                "message.timeout.ms": self.timeout_ms,
                "request.timeout.ms": min(30_000, self.timeout_ms),
                "allow.auto.create.topics": False,
                "reconnect.backoff.max.ms": 1000,
                "linger.ms": self.linger_ms,  # fewer, fuller produce requests; off the response path
                "error_cb": self._on_error,
                "logger": rdkafka_logger(),
            }
        )
        return Producer(conf)

    def _replace_producer(self) -> None:
        old, self._producer = self._producer, self._new_producer()
        if old is not None:
            with contextlib.suppress(KafkaException):
                old.purge(in_queue=True, in_flight=True)
                old.poll(0)

    def _on_error(self, err: KafkaError) -> None:
        if self._mode == SPOOLING and not self._connected:
            return  # already spooling; the probe decides when the broker is back
        if err.fatal() or err.code() == KafkaError._ALL_BROKERS_DOWN:
            log.warning(
                "broker unreachable (%s): events wait in the write-ahead log %s", err.str(), self.wal.dir
            )
            self._start_draining()
            if self._producer is not None:
                with contextlib.suppress(KafkaException):
                    self._producer.purge(in_queue=True, in_flight=err.fatal())

    def _on_delivery(self, rec: LogRecord, err: KafkaError | None, msg: Any) -> None:
        self._in_flight.pop(rec.seq, None)
        if err is None:
            self._delivered += 1
            if rec.t and self.on_delivered is not None:
                self.on_delivered(time.monotonic() - rec.t)
            self.wal.ack(
                rec.seq, rec.topic, msg.partition(), msg.offset(), landed=rec.topic not in self._tracked
            )
            return
        self._failures += 1
        if self._mode != DRAINING:
            log.warning(
                "delivery failed (%s): events wait in the write-ahead log %s", err.str(), self.wal.dir
            )
        self._start_draining()

    def _produce(self, rec: LogRecord) -> bool:
        try:
            self._producer.produce(
                rec.topic, value=rec.value, key=rec.key, on_delivery=partial(self._on_delivery, rec)
            )
        except BufferError:
            return False
        except KafkaException as err:  # fatal producer state: treat like a failed delivery
            self._in_flight[rec.seq] = rec
            self._on_delivery(rec, err.args[0], None)
            return True
        self._in_flight[rec.seq] = rec
        return True

    # ------------------------------------------------------------------ modes

    def _start_draining(self) -> None:
        if self._mode != DRAINING:
            self._mode = DRAINING
            self._pending.clear()  # they are in the log; the replay sends them

    def _finish_draining(self) -> None:
        self.wal.rewind()
        self._replace_producer()
        self._mode, self._connected = SPOOLING, False
        self._next_probe = time.monotonic() + self.probe_interval_s

    async def _probe(self) -> None:
        """Is the broker back, with our topics? (``list_topics`` blocks: an executor thread runs it.)"""
        producer = self._producer
        loop = asyncio.get_running_loop()
        try:
            md = await loop.run_in_executor(
                None, partial(producer.list_topics, timeout=min(2.0, self.probe_interval_s))
            )
            if producer is not self._producer or self._mode != SPOOLING:
                return
            missing = [t for t in self._topics if t not in md.topics]
            if missing:
                log.info("broker is back but topics %s are missing: waiting", missing)
                return
            if self.landing is not None and md.cluster_id and md.cluster_id != self.wal.cluster:
                self._new_cluster(md.cluster_id)
                self.wal.rewind()
            if self._tail_to_check:
                found = await loop.run_in_executor(
                    None, already_delivered, self.broker, self._tail_to_check, dict(self.wal.positions)
                )
                for seq, (topic, partition, offset) in found.items():
                    self.wal.ack(seq, topic, partition, offset, landed=topic not in self._tracked)
                self._tail_to_check = []
                self.wal.rewind()
        except KafkaException as err:
            log.debug("broker probe failed: %s", err)
            return
        finally:
            self._next_probe = time.monotonic() + self.probe_interval_s
        log.info("broker reachable: replaying %d events from the write-ahead log", self.wal.depth)
        self._connected = True

    def _replay(self) -> None:
        room = self.max_in_flight - len(self._in_flight)
        if room > 0:
            for rec in self.wal.next_batch(room):
                if rec.seq in self._in_flight:
                    continue
                self._topics.add(rec.topic)
                if not self._produce(rec):
                    self.wal.rewind()  # re-read it later; acknowledged and in-flight ones are skipped
                    return
        if self.wal.at_end and self._mode == SPOOLING:
            log.info("write-ahead log replayed: publishing directly again")
            self._mode = DIRECT

    def _step(self) -> None:
        if self._mode == DIRECT:
            while self._pending and len(self._in_flight) < self.max_in_flight:
                if not self._produce(self._pending[0]):
                    break
                self._pending.popleft()
        elif self._mode == SPOOLING:
            probe_due = not self._connected and time.monotonic() >= self._next_probe
            if probe_due and (self._probing is None or self._probing.done()):
                self._probing = asyncio.create_task(self._probe())
            if self._connected:
                self._replay()
        self._producer.poll(0)  # delivery reports and errors, on this thread
        self._follow_landing()
        self.wal.commit()  # events published outside a response (or not waited for) reach the disk too
        if self._mode == DRAINING and not self._in_flight:
            self._finish_draining()
        now = time.monotonic()
        if now - self._last_cursor_save > CURSOR_SAVE_S:
            self.wal.save_cursor()
            self._last_cursor_save = now

    # ------------------------------------------------------------------ landing (embedded broker)

    def _follow_landing(self) -> None:
        """Start a landing check when one is due; apply the last one's report when it is done."""
        if self.landing is None:
            return
        task = self._landing_task
        if task is not None:
            if not task.done():
                return
            self._landing_task = None
            if task.exception() is None and self._landing_epoch == self._cluster_switches:
                self._apply_landing(task.result())  # (a check that began before a switch read the old one)
            else:
                log.debug("landing check failed: %s", task.exception())
        now = time.monotonic()
        if now >= self._next_landing:
            self._next_landing = now + self.land_interval_s
            self._landing_epoch = self._cluster_switches
            self._landing_task = asyncio.get_running_loop().run_in_executor(None, self.landing.poll)

    def _apply_landing(self, report: LandingReport) -> None:
        if report.cluster is None:
            return
        if self.wal.cluster is None:
            self.wal.cluster = report.cluster  # first contact: what was delivered went to this one
        elif report.cluster != self.wal.cluster:
            if self._mode == DIRECT:  # a restart nobody noticed: in-flight records report first
                self._new_cluster(report.cluster)
                self._start_draining()  # then the log is replayed in order
            return  # otherwise the probe before the replay takes it
        for (topic, partition), below in report.landed.items():
            self.wal.land(topic, partition, below)

    def _new_cluster(self, cluster: str) -> None:
        known = self.wal.cluster
        self._cluster_switches += 1
        again = self.wal.forget_deliveries(cluster)
        if known is not None:
            (log.warning if again else log.info)(
                "the broker is a new cluster (%s, was %s): sending again the %d events it lost before "
                "they landed",
                cluster,
                known,
                again,
            )

    # ------------------------------------------------------------------ the pump task

    async def _run(self) -> None:
        try:
            while not self._closing:
                self._step()
                self._idle = not (self._pending or self._in_flight or self._mode != DIRECT)
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), TICK_IDLE_S if self._idle else TICK_BUSY_S)
                self._idle = False
            await self._shutdown()
        except Exception:  # the pump must never die silently: events would pile up unseen
            log.exception("publisher pump crashed; the write-ahead log keeps what was not delivered")
            self.wal.close()

    async def _shutdown(self) -> None:
        deadline = time.monotonic() + self.shutdown_flush_s
        while time.monotonic() < deadline:
            self._step()
            if self._mode == DIRECT and not self._pending and not self._in_flight:
                break
            if self._mode == SPOOLING and not self._connected:
                break  # the broker is unreachable: the log keeps the events for the next start
            await asyncio.sleep(TICK_BUSY_S)
        if self._producer is not None:
            with contextlib.suppress(KafkaException):
                self._producer.purge(in_queue=True, in_flight=True)
                self._producer.poll(0)
        if self._landing_task is not None:  # its consumer is closed below: let the check end first
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._landing_task, 10)
        self._in_flight.clear()
        self._pending.clear()
        if self.landing is not None:
            with contextlib.suppress(KafkaException, RuntimeError):
                self.landing.close()
        self.wal.close()
        self._producer = None  # breaks the producer <-> error_cb cycle: librdkafka is destroyed now
        if self.wal.depth:
            log.info(
                "publisher stopped: %d undelivered events kept in %s for the next start",
                self.wal.depth,
                self.wal.dir,
            )
