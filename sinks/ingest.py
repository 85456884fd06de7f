"""The sink process: consume the audited, dead-letter and ledger topics into DuckDB, serve queries meanwhile.

Offsets live in DuckDB, written in the same transaction as the rows (``DuckDBStore.write``), so the
consumer never trusts the broker's committed offsets: on assignment it seeks every partition to the
offset stored with the last committed batch (``on_assign``), or the beginning when none is stored. A
crash anywhere therefore re-reads exactly what was not committed, and rows upsert by identity, so the
result has no gap and no duplicate. Offsets are also committed to the broker after each batch, but
only so that external lag monitors see progress. Batches close at ``batch_max_rows`` rows or
``batch_max_wait_s`` seconds, which bounds memory; a closed batch is inserted on a writer thread while
the loop decodes the next one (``sinks.writer``), one batch at a time and in order. SIGTERM/SIGINT flush the open batch and exit 0.

    sluice sink --config infra/sluice.yaml
"""

from __future__ import annotations

import logging
import queue
import signal
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FuturesTimeout
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

from sinks.admin_key import ensure_admin_key
from sinks.arrow_tables import gc_paused
from sinks.batch import KEYS, BatchTopics, PendingBatch
from sinks.erasure import erase, erasure_producer
from sinks.erasure_models import ErasureRequest, ErasureResult
from sinks.exceptions import ErasureError, SinkError
from sinks.faults import CrashPlan
from sinks.flatten import SourceRecord
from sinks.metrics import SinkMetrics
from sinks.principal import Principal
from sinks.query_server import QueryServer, QueryService, database_id
from sinks.settings import SinkSettings
from sinks.store import DuckDBStore
from sinks.writer import BatchWriter, Written
from sluice.heap import settle_heap

log = logging.getLogger(__name__)

_MAX_CONSUME = 500  # records per consume() call; the batch is checked for size between calls
_ROWS_PER_RECORD_GUESS = 8


class SinkRunner:
    """One sink: owns the DuckDB file, a consumer, and the query endpoint."""

    def __init__(self, cfg: SinkSettings, crash: CrashPlan | None = None) -> None:
        self.cfg = cfg
        self.path = cfg.path(cfg.sink.database)
        self.crash = crash or CrashPlan.from_env()
        self.metrics = SinkMetrics()
        self.store = DuckDBStore.for_sink(self.path, cfg.sink, self.crash)
        self.writer = BatchWriter(self.store, cfg.sink.group_id)
        t = cfg.topics
        self.topics = BatchTopics(
            audited=t.name("trajectories_audited"),
            deadletter=t.name("deadletter"),
            raw=frozenset({t.name("steps_raw"), t.name("rewards_raw")}),
            ledger=t.name("ledger"),
        )
        self.batch = self._new_batch()
        self.stopping = threading.Event()
        self.ready = threading.Event()
        self._erasures: queue.Queue[tuple[ErasureRequest, Principal, Future[ErasureResult]]] = queue.Queue()
        self._assigned: list[tuple[str, int]] = []
        self._committed: dict[tuple[str, int], int] = self.store.stored_offsets(cfg.sink.group_id)
        self._consumer: Consumer | None = None
        self._producer: Producer | None = None
        self.server: QueryServer | None = None
        self._last_lag = self._last_progress = time.monotonic()

    # ------------------------------------------------------------------ lifecycle

    def run(self) -> int:
        """Run until SIGTERM/SIGINT (or ``stop()``); returns the exit code."""
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: self.stop())
        try:
            self.start()
            while not self.stopping.is_set():
                self.step()
        finally:
            self.shutdown()
        return 0

    def start(self) -> None:
        sink, t = self.cfg.sink, self.cfg.topics
        conf = self.cfg.broker.consumer_config(sink.group_id, **{"enable.auto.offset.store": False})
        self._consumer = Consumer(conf)
        self._adopt_broker()
        topics = [self.topics.audited, self.topics.deadletter, t.name("ledger")]
        if sink.assignment == "group":
            self._consumer.subscribe(topics, on_assign=self._on_assign, on_revoke=self._on_revoke)
        else:
            self._assign_all(topics)
        if sink.query_port:
            ensure_admin_key(self.cfg)  # closed by default: made (mode 0600, path logged) at first start
            service = QueryService(self.store.con, self.cfg, self.metrics, self.submit_erasure, self.health)
            try:
                self.server = QueryServer(service, sink.query_host, sink.query_port).start()
            except OSError as err:
                raise SinkError(f"query endpoint {sink.query_host}:{sink.query_port}: {err}") from None
        settle_heap()  # the store, clients and pools live as long as the sink
        self.ready.set()
        self.metrics.ready.set(1)
        log.info(
            "sluice sink ready: database=%s query=%s topics=%s group=%s assignment=%s",
            self.path,
            self.server.url if self.server else "off",
            ",".join(topics),
            sink.group_id,
            sink.assignment,
        )

    def stop(self) -> None:
        self.stopping.set()

    def shutdown(self) -> None:
        try:
            self.flush()
        finally:
            self.writer.close()
            self._fail_pending_erasures()
            if self._consumer is not None:
                self._consumer.close()
            if self.server is not None:
                self.server.stop()
            if self._producer is not None:
                self._producer.flush(self.cfg.sink.producer_timeout_s)
            self.store.close()
            self.metrics.ready.set(0)
            log.info("sluice sink stopped: %s", self._progress_line())

    # ------------------------------------------------------------------ the loop

    def step(self) -> None:
        """One turn: serve erasures, consume up to a batch's worth, flush when full or old."""
        assert self._consumer is not None
        if self.writer.done():
            self._written(self.writer.finish())
        self._serve_erasures()
        sink = self.cfg.sink
        # Records to ask for: what fits in the batch at the rows per record seen so far (memory bound).
        per_record = self.batch.rows // self.batch.records if self.batch.records else _ROWS_PER_RECORD_GUESS
        room = max(1, min(_MAX_CONSUME, (sink.batch_max_rows - self.batch.rows) // max(1, per_record)))
        wait = sink.batch_max_wait_s - self.batch.age_s() if self.batch.records else sink.batch_max_wait_s
        msgs = self._consumer.consume(num_messages=room, timeout=max(0.0, min(wait, 0.2)))
        with gc_paused():  # one collection per poll, not one per 700 records made
            self.batch.add_all(self._records(msgs))
        if msgs:
            self.crash.reached("after_poll")
        if self.batch.records and (
            self.batch.rows >= sink.batch_max_rows or self.batch.age_s() >= sink.batch_max_wait_s
        ):
            self._start_flush()
        now = time.monotonic()
        if now - self._last_lag >= sink.lag_interval_s:
            self._last_lag = now
            self._measure_lag()
        if now - self._last_progress >= sink.progress_interval_s:
            self._last_progress = now
            log.info("sink progress: %s", self._progress_line())

    def _records(self, msgs: list[Message]) -> list[SourceRecord]:
        """What the batch needs of each consumed message; a message that carries an error is reported."""
        if any(msg.error() is not None for msg in msgs):
            for msg in msgs:
                if (err := msg.error()) is not None:
                    self._on_error(err)
            msgs = [msg for msg in msgs if msg.error() is None]
        return [
            SourceRecord(
                msg.topic(),
                msg.partition(),
                msg.offset(),
                None if (key := msg.key()) is None else key.decode("utf-8", "replace"),
                msg.value(),
            )
            for msg in msgs
        ]

    def flush(self) -> None:
        """Write the open batch and its offsets in one transaction, and wait until it is committed."""
        self._start_flush()
        self._written(self.writer.finish())

    def _start_flush(self) -> None:
        """Hand the open batch to the writer (the loop goes on decoding while DuckDB inserts it)."""
        batch, self.batch = self.batch, self._new_batch()
        if batch.records:
            self._written(self.writer.submit(batch))

    def _written(self, done: Written | None) -> None:
        """Account for a committed batch: metrics, and its offsets as committed."""
        if done is None:
            return
        self.metrics.batch_seconds.observe(done.seconds)
        self.metrics.batches.inc()
        for table, n in done.rows.items():
            self.metrics.rows.labels(table).inc(n)
        for kind, n in done.batch.counts.as_dict().items():
            self.metrics.records.labels(kind).inc(n)
        self.metrics.dead_letters.inc(done.rows.get("dead_letters", 0))
        self._committed.update(done.batch.offsets)
        self._commit_to_broker(done.batch.offsets)

    def _commit_to_broker(self, offsets: dict[tuple[str, int], int]) -> None:
        """Informational only (lag monitors): the offsets that count are in DuckDB."""
        assert self._consumer is not None
        tps = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
        try:
            self._consumer.commit(offsets=tps, asynchronous=True)
        except KafkaException as err:
            log.debug("broker offset commit skipped: %s", err)

    def _new_batch(self) -> PendingBatch:
        return PendingBatch(
            topics=self.topics,
            sensitive_headers=tuple(self.cfg.sensitive_headers),
            require_redacted=self.cfg.sink.require_redacted,
            apply_tombstones=self.cfg.sink.tombstones == "delete",
        )

    # ------------------------------------------------------------------ assignment

    def _adopt_broker(self) -> None:
        """Offsets stored for another broker (the embedded one restarted empty) are dropped before the
        first assignment: reading past them would skip what the new broker holds."""
        assert self._consumer is not None
        try:
            cluster_id = self._consumer.list_topics(timeout=10).cluster_id
        except KafkaException as err:
            log.warning("cluster id not known yet (%s): keeping the stored offsets", err)
            return
        if not cluster_id:
            return
        if self.store.adopt_broker(cluster_id, self.cfg.sink.group_id):
            log.info(
                "broker %s is not the one the stored offsets belong to: reading every partition from its "
                "beginning (rows upsert by identity, so re-read records add nothing twice)",
                cluster_id,
            )
        self._committed = self.store.stored_offsets(self.cfg.sink.group_id)

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._written(self.writer.finish())  # the offsets of a batch being written count too
        stored = self.store.stored_offsets(self.cfg.sink.group_id)
        for tp in partitions:
            tp.offset = stored.get((tp.topic, tp.partition), OFFSET_BEGINNING)
        consumer.assign(partitions)
        self._assigned = [(tp.topic, tp.partition) for tp in partitions]
        log.info(
            "assigned %s", ", ".join(f"{tp.topic}[{tp.partition}]@{_show(tp.offset)}" for tp in partitions)
        )

    def _on_revoke(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # Pending records are dropped, not written: the next owner (maybe us) re-reads them from the
        # offsets stored in DuckDB, which still point before them.
        if self.batch.records:
            log.info("partitions revoked: dropping %d uncommitted records", self.batch.records)
        self.batch = self._new_batch()
        self._assigned = []

    def _assign_all(self, topics: list[str]) -> None:
        assert self._consumer is not None
        deadline = time.monotonic() + 60
        while True:
            md = self._consumer.list_topics(timeout=10).topics
            missing = [t for t in topics if t not in md or not md[t].partitions]
            if not missing:
                break
            if time.monotonic() > deadline:
                raise SinkError(f"topics not found on {self.cfg.broker.bootstrap_servers}: {missing}")
            log.warning("waiting for topics %s", missing)
            time.sleep(1)
        tps = [TopicPartition(t, p) for t in topics for p in sorted(md[t].partitions)]
        self._on_assign(self._consumer, tps)

    def _on_error(self, err: KafkaError) -> None:
        if err.fatal():
            raise SinkError(f"consumer failed: {err}")
        log.warning("consumer: %s", err)

    # ------------------------------------------------------------------ erasure

    def submit_erasure(self, req: ErasureRequest, principal: Principal) -> ErasureResult:
        """Called from a query-server thread: run ``req`` in the ingest loop and wait for it."""
        if self.stopping.is_set():
            raise ErasureError("the sink is stopping; retry when it runs again")
        fut: Future[ErasureResult] = Future()
        self._erasures.put((req, principal, fut))
        try:
            return fut.result(timeout=self.cfg.sink.producer_timeout_s + 60)
        except FuturesTimeout:
            raise ErasureError(
                "the sink did not run the erasure in time; see its log and the erasures table"
            ) from None

    def _serve_erasures(self) -> None:
        while True:
            try:
                req, principal, fut = self._erasures.get_nowait()
            except queue.Empty:
                return
            try:
                self.flush()
                result = erase(self.store.con, self.cfg, req, principal, self._erasure_producer, self.crash)
                self.metrics.erasures.inc()
                fut.set_result(result)
            except Exception as err:  # the caller gets the error; the sink keeps running
                fut.set_exception(err)

    def _fail_pending_erasures(self) -> None:
        while not self._erasures.empty():
            _, _, fut = self._erasures.get_nowait()
            fut.set_exception(ErasureError("the sink stopped before running this erasure; retry"))

    def _erasure_producer(self) -> Producer:
        if self._producer is None:
            self._producer = erasure_producer(self.cfg)
        return self._producer

    # ------------------------------------------------------------------ observability

    def _measure_lag(self) -> None:
        assert self._consumer is not None
        total = 0
        for topic, partition in list(self._assigned):
            # Cached: the high watermark of the last fetch response (no broker round trip on this thread).
            try:
                low, high = self._consumer.get_watermark_offsets(
                    TopicPartition(topic, partition), cached=True
                )
            except KafkaException:
                continue
            if high < 0:
                continue  # nothing fetched from this partition yet
            lag = max(0, high - self._committed.get((topic, partition), max(low, 0)))
            self.metrics.lag.labels(topic, str(partition)).set(lag)
            total += lag
        self.metrics.lag_total.set(total)

    def _progress_line(self) -> str:
        m = self.metrics
        rows = sum(m.value("sluice_sink_rows_written_total", table=t) for t in KEYS)
        return (
            f"{int(m.value('sluice_sink_records_total', kind='trajectories'))} trajectory versions, "
            f"{int(rows)} rows in {int(m.value('sluice_sink_batches_total'))} batches, "
            f"{int(m.value('sluice_sink_dead_letters_total'))} dead letters, "
            f"lag {int(m.value('sluice_sink_lag_total'))}"
        )

    def committed_offsets(self) -> dict[tuple[str, int], int]:
        """Next offset per (topic, partition) whose records are committed to DuckDB (read by the ingest
        loop's thread: the same offsets the store holds, without a query)."""
        return dict(self._committed)

    def health(self) -> dict[str, Any]:
        return {
            "database": database_id(self.path),
            "ready": self.ready.is_set(),
            "group_id": self.cfg.sink.group_id,
            "assigned_partitions": len(self._assigned),
        }


def _show(offset: int) -> str:
    return "beginning" if offset == OFFSET_BEGINNING else str(offset)
