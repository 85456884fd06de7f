"""Faust's aiokafka transport for the local Tansu broker: a short fetch wait, no record fetched but never
delivered, no connection waited on for minutes.

1. **Fetch wait.** Faust hard-codes ``fetch_max_wait_ms=1500`` for its consumers. Real Kafka answers a
   fetch as soon as data arrives, so the wait costs nothing there; Tansu answers a waiting fetch only on
   its own wake-ups (measured: ~380 ms after the record, vs 2–25 ms with a 50 ms wait), which adds that
   much latency to every stage hop. The wait comes from ``BrokerConfig.fetch_max_wait_ms``.
2. **Records dropped in a rebalance.** Faust's ``Consumer.getmany`` takes the records aiokafka fetched
   (aiokafka's position has moved past them) and then skips, without a seek back, every record whose
   partition is not in the *live* set of active partitions at that moment, or all the rest of the batch
   when the group generation changes while it iterates. A rebalance in the middle of a fetch (after a
   broker freeze every member's session expires at once) therefore lost a partition's fetched records
   until the worker restarted: its lag stayed put with rate 0 and no error. Here every record fetched
   but not delivered is fetched again: its partition (when still assigned) is sought back to the first
   such offset, so delivery stays at-least-once and the stage's idempotence does the rest.

3. **Seeking back a partition that never committed.** After a rebalance Faust seeks every partition back
   to its committed offset, so that records fetched but not processed are read again. aiokafka's
   ``seek_to_committed`` seeks only when the committed offset is above 0: a partition with nothing
   committed yet keeps its position, past records that were fetched by a ``getmany`` the rebalance
   cancelled (the consumer thread finished the call, the caller was gone, the records were dropped).
   That was the stuck worker after a broker freeze: aiokafka's position at the high watermark, Faust's
   read offset unset, lag stuck with rate 0, no error. Here such a partition is sought back to its
   beginning, which is what its committed offset means (``consumer_auto_offset_reset: earliest``).
4. **Connections the broker stopped answering.** After a freeze (SIGSTOP/SIGCONT) Tansu may never answer
   a request on a connection opened before it. aiokafka replaces a connection only when a request on it
   times out, and Faust gives consumer requests 90 s and producer requests 1,200 s: a stage worker whose
   output was waiting for an acknowledgement on such a connection stalled for 20 minutes (its input lag
   stuck, rate 0). Here every request of the worker's clients times out after ``request_timeout_ms``
   (15 s), so the dead connection is closed and the request retried on a new one; the producer's batches
   keep Faust's long lifetime, so a retried record is delivered, not failed.

5. **Offsets committed past records that were never processed.** Faust counts a record as processed
   (acknowledged, so its offset may be committed) in three cases where the stage never saw it: a record
   its stream skips because a rebalance began or the generation changed (the stream acknowledges what
   it skips), a jump in the delivered offsets (taken for a compacted range), and — its commit check
   being one off — a record missing right at the committed offset while later ones were processed. A
   record dropped by the client in a rebalance (the worker kept the partition, its fetch was cut short)
   was thus committed unprocessed: after a SIGKILLed peer or a broker freeze, rewards posted just before
   a trajectory's end never reached the join. Here an acknowledgement counts only when it comes from
   the generation that is live and while records flow; a jump in offsets is not counted; and an offset
   is committed only when every record from the committed offset up to it was processed: a missing one
   is read again (seek back), unless the broker no longer has it (below the partition's first offset,
   removed by retention). The stage topics are never compacted, so a hole inside them is always a
   record the client lost, never one the broker removed.
6. **Records lost at the tail of a partition.** The check in point 5 finds a missing record only when a
   later record of its partition was processed. When the lost records are the last ones a partition has
   (say the last reward before traffic paused), nothing reveals them: the committed offset stays below
   the client's position with nothing processed or in flight, and the records wait for the next restart.
   After each commit the consumer compares, per partition, its position with the committed offset; a
   gap that stays the same over two commits in a row, with nothing in flight, is read again.
7. **Work before a commit.** ``before_commit_hooks(app)`` run (and are awaited, when they return an
   awaitable) ahead of every offset commit, before Faust flushes its producer: the stages wait there for
   the broker to acknowledge their emissions, then flush their write-behind tables (``write_behind.py``).

8. **End offsets from fetches.** A table's recovery reads its changelog up to the partition's end,
   which Faust asks for with ListOffsets. Tansu answers that short of the end when the newest batch
   holds several records, so recovery would stop early and take its own offsets for inconsistent.
   ``highwaters`` here takes the end from ``pipeline.topic_ends`` (a fetch's high watermark on Tansu), so
   the worker's producer may put many records in one batch, as it does on Kafka.

It is registered under the URL schemes ``sluice-tansu`` and ``sluice-kafka`` through the
``faust.transports`` entry point, and ``BrokerConfig.faust_settings()`` selects it for both profiles:
points 2, 3, 5 and 6 are flaws of the client, not of Tansu, so a real Kafka cluster needs them too
(its fetch wait is ``broker.fetch_max_wait_ms`` like Tansu's; raise it there to poll an idle broker less).

Private parts of Faust (faust-streaming) and aiokafka it relies on, each because no setting does the same;
``tests/pipeline/stages/test_transport_contract.py`` checks each against the installed versions:

- aiokafka consumer ``_fetch_max_wait_ms`` (point 1): Faust passes a literal 1500, no setting reaches it.
- aiokafka clients' ``_request_timeout_ms`` (point 4): Faust's ``broker_request_timeout`` and
  ``producer_request_timeout`` also bound its recovery steps (which then go on with what they have) and a
  batch's lifetime (a retried record would fail): only the connections' timeout is shortened.
- Faust overrides: thread ``_create_worker_consumer`` (point 1, 4), ``_new_producer`` (4),
  ``_new_consumer_thread`` (1–3), ``_add_gap``, ``_new_offset`` (5), ``_commit_offsets`` (7: the hooks run
  after the offsets are chosen, before the producer flush; no Faust signal there is awaited).
- Faust consumer state: ``_wait_next_records``, ``_buffered_partitions``, ``_to_message`` (point 2: Faust's
  ``getmany`` with the seek back), ``_acked``, ``_acked_index``, ``_committed_offset`` (5, 6),
  ``_waiting_for_ack`` (5), the thread's ``_ensure_consumer`` (3).
Seeks go through Faust's public ``Consumer.seek`` and in-flight records through ``Consumer.unacked``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, ClassVar

from aiokafka.errors import IllegalStateError
from faust.transport.drivers import aiokafka as stock
from faust.types import TP, Message
from mode.utils.futures import notify

from pipeline.topic_ends import end_offsets
from sluice.broker_config import BrokerConfig

log = logging.getLogger(__name__)


REQUEST_TIMEOUT_MS = 15_000  # per request on a connection; a batch still lives as long as Faust says
POSITION_WAIT_S = 1.0  # the most a tail check waits for one partition's position
REREAD_AFTER_S = 10.0  # a missing record is sought again at most this often (a backlog may delay it)


class ShortFetchConsumerThread(stock.AIOKafkaConsumerThread):
    fetch_max_wait_ms: ClassVar[int] = 50

    async def seek_to_committed(self) -> Mapping[TP, int]:
        """Seek every assigned partition to its committed offset, the never-committed ones included."""
        return await self.call_thread(self._seek_to_committed_all)

    async def _seek_to_committed_all(self) -> Mapping[TP, int]:
        consumer = self._ensure_consumer()
        try:
            offsets = await consumer.seek_to_committed()  # seeks only where the committed offset is > 0
        except IllegalStateError:  # the assignment changed under the seek (a rebalance, a shutdown):
            log.info("assignment changed while seeking to committed offsets; the next assignment seeks")
            return {}  # nothing is sought now; the new assignment's recovery seeks its own partitions
        assigned = consumer.assignment()  # a rebalance may have revoked some while the seek awaited
        unset = [tp for tp, offset in offsets.items() if (not offset or offset <= 0) and tp in assigned]
        if unset:
            try:
                await consumer.seek_to_beginning(*unset)
            except IllegalStateError:  # revoked meanwhile: the new owner reads from the committed offset
                log.info("partitions revoked while seeking to their beginning; the next assignment seeks")
        return offsets

    def _create_worker_consumer(self, transport: Any) -> Any:
        """Faust's worker consumer with the profile's fetch wait (point 1) and short connection timeouts (4):
        Faust hard-codes the one and ties the other to its recovery timeouts, so both are set here."""
        consumer = super()._create_worker_consumer(transport)
        consumer._fetch_max_wait_ms = self.fetch_max_wait_ms  # read when the consumer starts its fetcher
        consumer._client._request_timeout_ms = REQUEST_TIMEOUT_MS  # read when it opens a connection
        return consumer


class ReconnectingProducer(stock.Producer):
    """Faust's producer whose connections give up on a request after ``REQUEST_TIMEOUT_MS``."""

    def _new_producer(self, transactional_id: str | None = None) -> Any:
        # ``producer_request_timeout`` would also expire queued batches after 15 s (their records failed):
        # only the client's connections get the short timeout (point 4)
        producer = super()._new_producer(transactional_id)
        producer.client._request_timeout_ms = REQUEST_TIMEOUT_MS  # batches keep their own lifetime
        return producer


def undelivered(records: Mapping[TP, Sequence[Any]], delivered: Mapping[TP, int]) -> dict[TP, int]:
    """Per partition of a fetched batch, the first offset that was not delivered (none: all were)."""
    out: dict[TP, int] = {}
    for tp, recs in records.items():
        last = delivered.get(tp)
        rest = [r.offset for r in recs if last is None or r.offset > last]
        if rest:
            out[tp] = min(rest)
    return out


def first_unprocessed(acked: Sequence[int], committed: int | None) -> int | None:
    """The committed offset when its record is not among the processed ones but later records are (a
    hole at the head: nothing may be committed until it is processed); None when the head is whole."""
    if not acked:
        return None
    start = committed or 0
    return start if min(acked) > start else None


def unprocessed_tail(
    position: int | None, committed: int | None, acked: Sequence[int], busy: bool
) -> int | None:
    """The committed offset when the client has handed out records past it (``position``) yet none of
    them is processed, awaiting processing, or in flight (``busy``): records lost at the tail of a
    partition, which no later record reveals as a hole. None when nothing is missing."""
    if position is None or busy or acked:
        return None
    start = committed or 0
    return start if position > start else None


class ShortFetchConsumer(stock.Consumer):
    broker: ClassVar[BrokerConfig | None] = None  # set by ``use_broker``

    def _new_consumer_thread(self) -> ShortFetchConsumerThread:  # Faust's factory: the only way in
        return ShortFetchConsumerThread(self, loop=self.loop, beacon=self.beacon)

    async def highwaters(self, *partitions: TP) -> Mapping[TP, int]:
        """One past the last record of each partition, right on Tansu too (point 8)."""
        broker = self.broker
        if broker is None or broker.profile != "tansu" or not partitions:
            return await super().highwaters(*partitions)
        wanted = [(tp.topic, tp.partition) for tp in partitions]
        ends = await asyncio.get_running_loop().run_in_executor(None, end_offsets, broker, wanted)
        return {tp: ends[(tp.topic, tp.partition)] for tp in partitions}

    @property
    def _seeks(self) -> dict[TP, int]:
        """Seeks back per partition (``_seek_back``), so that ``getmany`` can tell a batch fetched before."""
        return self.__dict__.setdefault("_sluice_seeks", {})

    def _is_live(self, message: Message) -> bool:
        """Whether an acknowledgement of ``message`` may count: its generation is the live one and records
        flow. Faust's streams also acknowledge the records they skip in a rebalance (flow stopped,
        generation changed); those were never processed, and records finished during a rebalance are
        read again by whoever owns the partition next (the stages are idempotent)."""
        return self.app.flow_control.is_active() and message.generation_id == self.app.consumer_generation_id

    def ack(self, message: Message) -> bool:
        if message.acked or self._is_live(message):
            return super().ack(message)
        message.acked = True  # done with, so a rebalance does not wait for it; not committable
        self.unacked.discard(message)
        notify(self._waiting_for_ack)  # private: wakes ``wait_empty``, as Faust's own ``ack`` does
        return False

    async def _add_gap(self, tp: TP, offset_from: int, offset_to: int) -> None:
        """Faust's drain loop calls this when a delivered offset jumps, and counts the jumped records as
        processed (a compacted range). The stage topics are never compacted: the jumped records were
        lost by the client, so they are left uncounted and ``_new_offset`` has them read again."""
        log.warning(
            "records of %s from offset %d to %d were not delivered: they are not counted as processed",
            tp,
            offset_from,
            offset_to - 1,
        )

    def _new_offset(self, tp: TP) -> int | None:
        """Faust's next offset to commit, but only when the records from the committed offset on were
        processed without a hole; a missing head record is read again first."""
        missing = first_unprocessed(self._acked[tp], self._committed_offset[tp])
        if missing is not None:
            self._read_again(tp, missing)
            return None
        return super()._new_offset(tp)

    async def _commit_offsets(self, offsets: Mapping[TP, int], start_new_transaction: bool = True) -> bool:
        """The app's ``before_commit`` hooks (table writes held back, sent now), then Faust's commit, which
        flushes the producer before it commits: an offset is committed only after what its records wrote."""
        for hook in before_commit_hooks(self.app):
            done = hook()
            if inspect.isawaitable(done):
                await done
        return await super()._commit_offsets(offsets, start_new_transaction=start_new_transaction)

    async def force_commit(self, topics: Any = None, start_new_transaction: bool = True) -> bool:
        """Faust's commit, then the check for records lost at the tail of a partition."""
        did_commit = await super().force_commit(topics, start_new_transaction=start_new_transaction)
        await self._check_tails()
        return did_commit

    async def _check_tails(self) -> None:
        """Read again a partition whose tail records were handed out but never processed (the last records
        before a rebalance, a cancelled fetch): no later record shows the hole, so the head check above
        never sees it. A tail counts as lost when it looks the same on two checks in a row (one commit
        interval apart), so records being delivered at the moment of a check are left alone."""
        last: dict[TP, tuple[int, int]] = self.__dict__.setdefault("_sluice_tails", {})
        if self.app.rebalancing or not self.flow_active:
            last.clear()
            return
        busy = {m.tp for m in list(self.unacked)}
        seen: dict[TP, tuple[int, int]] = {}
        for tp in list(self.assignment()):
            if not self.app.topics.acks_enabled_for(tp.topic):
                continue  # changelogs are read by the recovery, not acknowledged
            acked = self._acked.get(tp, ())
            if acked or tp in busy:
                continue  # records in progress: no tail is lost, and no position is asked of the thread
            try:  # aiokafka waits for a position being reset: a commit is never held up for it
                position = await asyncio.wait_for(self.position(tp), POSITION_WAIT_S)
            except (IllegalStateError, TimeoutError):  # revoked meanwhile, or its position is being reset
                continue
            committed = self._committed_offset.get(tp)
            missing = unprocessed_tail(position, committed, acked, busy=False)
            if missing is None or position is None:
                continue
            seen[tp] = (missing, position)
            if last.get(tp) == seen[tp]:
                log.warning("records of %s from offset %d to %d were handed out but never processed", tp,
                            missing, position - 1)  # fmt: skip
                self._read_again(tp, missing)
        last.clear()
        last.update(seen)

    def _read_again(self, tp: TP, offset: int) -> None:
        rereads: dict[tuple[TP, int], float] = self.__dict__.setdefault("_sluice_rereads", {})
        now = time.monotonic()
        if now - rereads.get((tp, offset), -REREAD_AFTER_S) < REREAD_AFTER_S or self.app.rebalancing:
            return
        rereads[(tp, offset)] = now
        asyncio.ensure_future(self._seek_back(tp, offset))

    async def _seek_back(self, tp: TP, offset: int) -> None:
        """Read ``tp`` again from ``offset``, the first record not processed; or, when the broker no longer
        has it (retention removed it), count the records below the partition's first offset as absent."""
        if tp not in self.assignment():
            return  # revoked: its next owner reads it from the committed offset
        try:
            earliest = (await self.earliest_offsets(tp)).get(tp, 0) or 0
            if offset < earliest:
                log.warning(
                    "records of %s below offset %d are gone from the broker: skipping them", tp, earliest
                )
                absent = range(offset, earliest)
                self._acked[tp].extend(absent)
                self._acked_index[tp].update(absent)
                return
            log.warning("record of %s at offset %d was not processed: reading again from it", tp, offset)
            self._seeks[tp] = self._seeks.get(tp, 0) + 1  # a batch fetched before is not delivered
            await self.seek(tp, offset)  # the drain loop delivers offsets >= it from now on
        except IllegalStateError:  # revoked meanwhile: its next owner reads it from the committed offset
            return

    async def getmany(self, timeout: float) -> AsyncIterator[tuple[TP, Message]]:
        """Faust's ``getmany`` (round-robin over partitions, generation and flow checks), except that
        records it does not deliver are fetched again instead of lost."""
        records, active_partitions = await self._wait_next_records(timeout)
        generation_id = self.app.consumer_generation_id
        if records is None or self.should_stop:
            return
        if not self.flow_active:
            await self.perform_seek()  # Faust's own rule: back to the committed offsets
            return
        delivered: dict[TP, int] = {}
        seeks = dict(self._seeks)
        try:
            for tp, record in self.scheduler.iterate(records):
                if not self.flow_active or self.app.consumer_generation_id != generation_id:
                    break
                if self._seeks.get(tp, 0) != seeks.get(tp, 0):
                    continue  # sought back meanwhile: these come again, after the record it seeks
                if active_partitions is None or tp in active_partitions or tp in self._buffered_partitions:
                    self.app.monitor.track_tp_end_offset(tp, self.highwater(tp))
                    delivered[tp] = record.offset
                    yield tp, self._to_message(tp, record)
        finally:
            same_generation = self.app.consumer_generation_id == generation_id
            await self._fetch_again(undelivered(records, delivered), same_generation)

    async def _fetch_again(self, first_offsets: Mapping[TP, int], same_generation: bool) -> None:
        """Seek each still-assigned partition back so that its undelivered records are read again: to the
        first of them, or to the committed offset when that is earlier. Never forward past a record that
        may not have been processed: after a generation change the recovery may already have sought back
        to the committed offsets, so without one the partition is read from its beginning."""
        assigned = self.assignment()
        for tp, first in first_offsets.items():
            if tp not in assigned:
                continue  # revoked: its new owner reads it from the committed offset
            committed = self._committed_offset.get(tp)
            fallback = first if same_generation else 0
            target = fallback if committed is None else min(first, committed)
            log.warning(
                "records of %s from offset %d were fetched but not delivered: reading again from %d",
                tp,
                first,
                target,
            )
            try:
                await self.seek(tp, target)  # the drain loop delivers offsets >= it from now on
            except IllegalStateError:  # revoked between the check and the seek: its new owner reads it
                continue


class Transport(stock.Transport):
    Consumer = ShortFetchConsumer
    Producer = ReconnectingProducer
    driver_version = stock.Transport.driver_version


def before_commit_hooks(app: Any) -> list[Callable[[], object]]:
    """The callables run before each offset commit of ``app``'s consumer (append to add one); an
    awaitable one returns is awaited before the commit goes on."""
    return app.__dict__.setdefault("_sluice_before_commit", [])


def use_broker(broker: BrokerConfig) -> None:
    """Apply the broker profile to every consumer this transport creates: its fetch wait, and where end
    offsets are read."""
    ShortFetchConsumerThread.fetch_max_wait_ms = broker.fetch_max_wait_ms
    ShortFetchConsumer.broker = broker
