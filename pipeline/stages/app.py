"""The Faust app of the governance stages: topics, tables, agents and timers, built from the config.

    govern agent:  steps.raw + rewards.raw  ──►  redact ──► steps.redacted     (table: placeholders)
                                                    └──► join ──► trajectories.audited / .train
                   + ticks + erasure        ──►  join            (tables: join_state, join_steps)
    timers:        due trajectories of this worker's active partitions ──► ticks; readiness; counters;
                   the heartbeat file `sluice status` reads
                   + erasure                ──►  purge, markers, tombstones    (table: erasure_rules)

One agent, one pass per record: a raw event is redacted and joined in the same step, so it is read from
the broker once; ``steps.redacted`` carries the redacted events out for readers outside the stages (the
stages do not read it back). Departures from the usual Faust recipe: every topic is consumed as raw
bytes and decoded by the stage (poison records go to the dead-letter topic instead of crashing the
agent); ``Stream.join`` is not used
(not implemented in Faust) — joins look up tables co-partitioned by trajectory id; timers never write
tables (Faust only allows that while processing a record of the partition), they send ticks.
Store: ``rocksdb://`` (rocksdict) by default — table partitions live on disk under the worker's data
dir, so days-long waits are bounded by disk, not RAM, and a restart reuses them; ``memory://`` rebuilds
from the changelogs. Broker quirks come from ``BrokerConfig.faust_settings()``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path
from typing import Any

import faust

from governance.redaction import Redactor
from pipeline.stages.counters import StageCounters
from pipeline.stages.due_index import DueIndex
from pipeline.stages.erasure_guard import ErasureGuard
from pipeline.stages.exceptions import OutputError
from pipeline.stages.heartbeat import WorkerHeartbeat, heartbeat_path, write_heartbeat
from pipeline.stages.join_stage import JoinStage
from pipeline.stages.names import app_id, ticks_topic
from pipeline.stages.outputs import exit_now
from pipeline.stages.redact_stage import RedactStage
from pipeline.stages.scheduler import TickScheduler
from pipeline.stages.settings import StagesSettings
from pipeline.stages.transport import before_commit_hooks, use_broker
from pipeline.stages.write_behind import WriteBehindTable

log = logging.getLogger("sluice.stages")


def _table_options(store: str, cfg: StagesSettings) -> dict[str, Any] | None:
    if store != "rocksdb://":
        return None
    return {  # a fresh dict per table: faust's rocksdb store pops keys from it
        "write_buffer_size": 8 << 20,
        "max_write_buffer_number": 2,
        "target_file_size_base": 16 << 20,
        "block_cache_size": cfg.stages.rocksdb_cache_mb << 20,
        "block_cache_compressed_size": 8 << 20,
    }


def table_store(cfg: StagesSettings) -> str:
    """The Faust store URL; rocksdb needs ``rocksdict`` (falls back to memory, loudly, without it)."""
    if cfg.stages.store == "memory":
        return "memory://"
    try:
        import rocksdict  # noqa: F401
    except ImportError:
        log.warning(
            "stages.store=rocksdb but rocksdict is not installed (pip install rocksdict): using memory://"
        )
        return "memory://"
    return "rocksdb://"


class StagesApp:
    """One worker's Faust app. ``app`` is what ``faust.Worker`` runs."""

    def __init__(self, cfg: StagesSettings, datadir: Path, redactor: Redactor | None = None) -> None:
        self.cfg = cfg
        self.heartbeat_file = heartbeat_path(datadir)
        self.slot = int(datadir.name.rsplit("-", 1)[-1]) if datadir.name[-1:].isdigit() else 0
        topics = cfg.topics
        web = cfg.stages.web_port
        self.store = table_store(cfg)
        use_broker(cfg.broker)
        self.app = faust.App(
            app_id(cfg.topics, cfg.stages),
            datadir=str(datadir),
            store=self.store,
            autodiscover=False,
            web_enabled=web is not None,
            web_port=web or 6066,
            web_bind="127.0.0.1",
            topic_partitions=topics.partitions,
            topic_replication_factor=topics.replication_factor,
            topic_disable_leader=True,
            broker_commit_interval=cfg.stages.commit_interval_s,
            consumer_auto_offset_reset="earliest",
            **cfg.broker.faust_settings(),
        )
        raw = {"key_serializer": "raw", "value_serializer": "raw"}
        app = self.app
        self.ticks_name = ticks_topic(cfg.topics, cfg.stages)
        self.raw_topics = frozenset({topics.name("steps_raw"), topics.name("rewards_raw")})
        govern_in = app.topic(*sorted(self.raw_topics), self.ticks_name, topics.name("erasure"), **raw)
        redacted_out = app.topic(topics.name("steps_redacted"), **raw)
        self.ticks_out = app.topic(self.ticks_name, **raw)
        audited = app.topic(topics.name("trajectories_audited"), **raw)
        train = app.topic(topics.name("trajectories_train"), **raw)
        deadletter = app.topic(topics.name("deadletter"), **raw)

        def table(name: str, help_text: str) -> Any:
            return app.Table(
                name,
                key_type=bytes,
                value_type=bytes,
                partitions=topics.partitions,
                options=_table_options(self.store, cfg),
                help=help_text,
            )

        self.placeholders = WriteBehindTable(
            table("placeholders", "trajectory id -> placeholder state (digests only)")
        )
        self.join_state = WriteBehindTable(table("join_state", "trajectory id -> join state"))
        self.join_steps = WriteBehindTable(table("join_steps", "trajectory id + step id -> redacted step"))
        self.held_tables = (self.join_state, self.join_steps, self.placeholders)
        self.processing = asyncio.Lock()  # held while a record is processed, and while tables flush
        before_commit_hooks(app).append(self.flush_tables)
        self._hold_writes_until_revoked()
        self.erasure_rules = table("erasure_rules", "erasure id -> tenant/subject erasure criterion")
        self.guard = ErasureGuard(self.join_state, self.erasure_rules, cfg.rewards.keep_erased_s)
        self.counters = StageCounters()
        self.index = DueIndex()
        t0 = time.monotonic()
        self.redactor = redactor or Redactor.from_config(cfg.redaction)
        log.info("redaction engines built in %.1fs", time.monotonic() - t0)
        self.redact_stage = RedactStage(
            self.redactor, self.placeholders, redacted_out, deadletter, self.counters, self.guard
        )
        self.join_stage = JoinStage(
            cfg,
            states=self.join_state,
            steps=self.join_steps,
            placeholders=self.placeholders,
            audited_topic=audited,
            train_topic=train,
            deadletter_topic=deadletter,
            ticks_topic_name=self.ticks_name,
            index=self.index,
            counters=self.counters,
            guard=self.guard,
            erasure_topic_name=topics.name("erasure"),
            compact=self.compact_partition,
        )
        self.scheduler = TickScheduler(
            app, self.index, self.join_state, self.ticks_out, topics.name("steps_raw")
        )
        self._wire(govern_in)

    def write_heartbeat(self) -> None:
        """This worker's pid, readiness and counters, for ``sluice status`` (see ``heartbeat.py``)."""
        beat = WorkerHeartbeat(
            slot=self.slot,
            pid=os.getpid(),
            updated=time.time(),
            assigned=self.scheduler.active is not None and not self.app.rebalancing,
            pending_joins=len(self.index),
            counts=dict(self.counters.counts),
        )
        write_heartbeat(self.heartbeat_file, beat)

    async def flush_tables(self) -> None:
        """Write the table writes held back (``write_behind.py``) to the stores and changelogs, once the
        broker has every emission they record. No record is processed meanwhile (so no new emission
        slips in between the wait and the writes)."""
        async with self.processing:
            await self._flush_held()

    async def _flush_held(self) -> None:
        """``flush_tables`` from inside the processing of a record (which already holds ``processing``)."""
        try:
            await self.join_stage.emissions_delivered()
        except OutputError as exc:  # nothing that records the lost emission may be written or committed
            exit_now(str(exc))
        for held in self.held_tables:
            held.flush()

    def _hold_writes_until_revoked(self) -> None:
        """Flush the held writes before Faust gives partitions up (it closes their stores first). Faust's
        public ``on_partitions_revoked`` signal is sent after the stores are closed: too late, so the
        app's private callback, which the consumer is given when it is created, is wrapped instead."""
        revoke = self.app._on_partitions_revoked

        async def on_partitions_revoked(revoked: Any) -> None:
            await self.flush_tables()
            await revoke(revoked)

        self.app._on_partitions_revoked = on_partitions_revoked  # read when the consumer is created

    async def compact_partition(self, partition: int) -> None:
        """After an erasure: flush and compact this partition's RocksDB files, so deleted values leave the
        disk (a delete alone only writes a tombstone; the old value stays in older files until compacted).
        Runs in a thread: the agent keeps processing meanwhile. Called while the agent processes the
        erasure record."""
        await self._flush_held()  # the deletes reach the files before they are compacted
        dbs = []
        for held in self.held_tables:
            # Faust's RocksDB store keeps one DB per partition in private ``_dbs``; no public accessor
            db = getattr(held.table.data, "_dbs", {}).get(partition)
            if db is not None and hasattr(db, "compact_range"):
                dbs.append(db)

        def compact() -> None:
            for db in dbs:
                db.flush()
                db.compact_range(None, None)

        if dbs:
            await asyncio.get_running_loop().run_in_executor(None, compact)

    def _wire(self, govern_in: Any) -> None:
        app = self.app
        redact_stage, join_stage, raw_topics = self.redact_stage, self.join_stage, self.raw_topics

        held, processing = self.held_tables, self.processing

        async def govern(stream: Any) -> None:
            async for event in stream.events():
                m = event.message
                async with processing:
                    try:
                        if m.topic in raw_topics:
                            redacted = await redact_stage.handle(
                                m.topic, m.partition, m.offset, m.key, m.value
                            )
                            if redacted is not None:
                                await join_stage.join(redacted, m.topic, m.partition, m.offset, m.key)
                        else:
                            await join_stage.handle(m.topic, m.partition, m.offset, m.key, m.value)
                    except OutputError as exc:  # leaving the loop would acknowledge the record
                        exit_now(str(exc))
                    if any(t.full for t in held):  # writing earlier than the commit is always allowed
                        await self._flush_held()

        app.agent(govern_in, name="sluice.stages.govern")(govern)
        app.timer(self.cfg.rewards.tick_s, name="sluice.stages.ticks")(self.scheduler.run_once)

        async def stats() -> None:
            log.info("stages counters: %s pending=%d", self.counters.summary(), len(self.index))

        app.timer(self.cfg.stages.stats_interval_s, name="sluice.stages.stats")(stats)

        async def heartbeat() -> None:
            self.write_heartbeat()

        app.timer(self.cfg.stages.heartbeat_s, name="sluice.stages.heartbeat")(heartbeat)

        if self.cfg.stages.web_port is not None:

            async def metrics(view: Any, request: Any) -> Any:
                text = self.counters.prometheus(pending=len(self.index))
                return view.text(text, content_type="text/plain; version=0.0.4")

            app.page("/metrics", name="sluice_metrics")(metrics)
