"""The tick scheduler: readiness, the due index of this worker's partitions, and ticks.

Every ``RewardJoinConfig.tick_s`` (once table recovery is done and no rebalance is under way): if the
set of active partitions changed, log the readiness line, drop revoked partitions from the due index and
rebuild it for new ones from the ``join_state`` table (a few bytes per state); then send one tick per
due trajectory to the tick topic, same partition. Only this worker's active partitions are scanned.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import faust

from pipeline.stages.due_index import DueIndex
from pipeline.stages.outputs import send
from pipeline.stages.storage import Table, peek_due
from pipeline.stages.ticks import JoinTick
from sluice.heap import settle_heap

log = logging.getLogger("sluice.stages")
READY_LINE = "sluice stages ready"
# Records make short-lived objects freed by reference counting; collections of the young generation find
# little cyclic garbage, so they run a tenth as often as by default.
GEN0_THRESHOLD = 7_000


class TickScheduler:
    """Given what it reads (the Faust app's recovery and assignment, the ``join_state`` table) and what it
    writes (the due index, the tick topic): no reference back to the stages app."""

    def __init__(
        self, app: faust.App, index: DueIndex, join_state: Table, ticks_out: Any, source_topic: str
    ) -> None:
        self.app, self.index, self.join_state, self.ticks_out = app, index, join_state, ticks_out
        self.source_topic = source_topic
        self.active: frozenset[int] | None = None
        self.indexed: set[int] = set()

    def _ready(self) -> bool:
        app = self.app
        return app.tables.recovery.completed.is_set() and not app.rebalancing

    def _active_partitions(self) -> frozenset[int]:
        actives = self.app.assignor.assigned_actives()
        return frozenset(tp.partition for tp in actives if tp.topic == self.source_topic)

    def rebuild(self, partitions: frozenset[int]) -> int:
        index = self.index
        for p in (self.indexed | index.partitions) - partitions:
            index.drop_partition(p)
        fresh = partitions - self.indexed
        self.indexed = set(partitions)
        n = 0
        if fresh:
            for key, value in self.join_state.items():
                partition, due = peek_due(value)
                if partition in fresh:
                    index.set(partition, key.decode(), due)
                    n += 1
        return n

    async def run_once(self) -> None:
        if not self._ready():
            return
        partitions = self._active_partitions()
        if partitions != self.active:
            n = self.rebuild(partitions)
            self.active = partitions
            # what recovery and assignment built lives as long as the worker; no collection here: a pause
            # in the middle of a rebalance would hold the consumer's heartbeats
            settle_heap(GEN0_THRESHOLD, collect=False)
            log.info(
                "%s: app=%s partitions=%s pending=%d",
                READY_LINE,
                self.app.conf.id,
                sorted(partitions),
                n,
            )
        now = time.time()
        for partition, tid in self.index.pop_due(now):
            tick = JoinTick(trajectory_id=tid, due_at=now)
            await send(
                self.ticks_out,
                key=tid.encode(),
                value=tick.model_dump_json().encode(),
                partition=partition,
            )
