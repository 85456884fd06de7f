"""The join stage adapter: eligibility tagging, delayed reward join and replay grading on Faust tables.

Joins each event the redact stage just redacted, in the same agent and the same pass over its record
(``join``: the event as validated there, its wire bytes stored as step body), and reads the internal
tick topic and the erasure topic itself (``handle``). Per event: apply the pure transition
(``governance.reward_join``), store or purge step bodies, try an
emission, store the state, re-schedule it in the due index. An emission builds the governed trajectory
(``build_emission``: eligibility at ``now``, replay grade, and the train decision ``train_blockers``
carried on the record), sends it to the audited topic (and to the train topic when ``train_blockers`` is
empty) by reference (``on_topic``: the step records that topic does not hold yet, then the header, all on
the trajectory's partition) and records the emitted version and the step records each topic holds in the
state. The agent does not wait for the broker there: the
state is held in the write-behind table, and every flush of it (before a commit, a revoke or a
compaction) first waits in ``emissions_delivered`` until the broker has every emission sent so far. So
the stored state never says a version was emitted before the broker has it: a crash in between re-emits
the same version (same ``event_id``), it never skips one. Ticks (from the timer) emit what waited long enough, dead-letter orphaned rewards and
delete expired states.

Input states are written back even when a redelivered record changes nothing: that re-sends a
changelog write a crash may have lost.

Erasure: the erasure topic (co-partitioned, keyed by trajectory id) comes into the same agent as the raw
topics, so an erasure is ordered with the trajectory's records on this worker. For each erased
trajectory the stage
deletes its join state, step bodies and placeholders, leaves a content-free marker
(``pipeline.stages.erasure_guard``) and sends tombstones to the audited and train topics after anything
it emitted before: one per step record key it sent, then the trajectory's own. A tenant/subject erasure without an id scans this partition's states for matches and
remembers the criterion for records still in flight. Events of erased data never get here: the redact
stage drops them in the same pass (``ErasureGuard.covers``), and erasures are records of this same
agent, so none lands between that check and the join.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import InitVar, dataclass, field
from typing import Any

from governance.reward_join import (
    JoinState,
    Transition,
    apply_end,
    apply_reward,
    apply_step,
    build_emission,
    is_expired,
    is_orphaned,
    mark_emitted,
    next_due_at,
    on_topic,
    plan_emission,
    step_payloads,
)
from pipeline.stages.codec import check_key, decode_event
from pipeline.stages.counters import StageCounters
from pipeline.stages.deadletter import DeadLetterSender, build_dead_letter
from pipeline.stages.due_index import DueIndex
from pipeline.stages.erasure_guard import ErasureGuard
from pipeline.stages.exceptions import RejectedEvent
from pipeline.stages.outputs import Sent, deliver_all, delivered, send_all
from pipeline.stages.redact_stage import Redacted
from pipeline.stages.settings import StagesSettings
from pipeline.stages.storage import (
    Table,
    decode_state,
    delete_keys,
    load_state,
    load_step_bodies,
    peek_due,
    placeholder_key,
    save_state,
    step_key,
    store_step,
)
from pipeline.stages.ticks import JoinTick
from sluice.events import ErasureEvent, RewardEvent, StepEvent, TrajectoryEndEvent, encode, trajectory_owner
from sluice.step_refs import step_record_key

log = logging.getLogger("sluice.stages.join")
STAGE = "reward_join"
TICK_RETRY_S = 60.0


@dataclass(eq=False, kw_only=True)
class JoinStage:
    """Joins redacted records into trajectories held in ``states`` (step bodies in ``steps``) and emits
    them to ``audited_topic`` / ``train_topic``; what it cannot process goes to ``deadletter_topic``."""

    cfg: StagesSettings = field(kw_only=False)
    states: Table
    steps: Table
    placeholders: Table
    audited_topic: Any
    train_topic: Any
    deadletter_topic: InitVar[Any]
    ticks_topic_name: str
    index: DueIndex
    counters: StageCounters
    guard: ErasureGuard
    erasure_topic_name: str | None = None
    compact: Callable[[int], Awaitable[None]] | None = None
    clock: Callable[[], float] = time.time
    dead_letters: DeadLetterSender = field(init=False, repr=False)
    _unacked: list[Sent] = field(init=False, repr=False, default_factory=list)

    def __post_init__(self, deadletter_topic: Any) -> None:
        self.dead_letters = DeadLetterSender(STAGE, deadletter_topic, self.counters)

    async def emissions_delivered(self) -> None:
        """Wait until the broker has every emission sent so far (``OutputError`` if one failed): the
        states that record them may then be written to the table's store and changelog."""
        sent, self._unacked = self._unacked, []
        await delivered(sent)

    async def handle(
        self, topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None
    ) -> None:
        """A record of the tick or the erasure topic."""
        self.counters.inc("join_in")
        tick: JoinTick | None = None
        async with self.dead_letters.catching(topic, partition, offset, key, value) as caught:
            if topic == self.ticks_topic_name:
                tick = JoinTick.model_validate_json(value or b"")
                await self._tick(tick.trajectory_id, partition)
                return
            if topic != self.erasure_topic_name:
                raise RejectedEvent(f"the join stage does not read {topic}", "UnexpectedTopic")
            erasure = decode_event(value, (ErasureEvent,))
            if erasure.trajectory_id is not None:
                check_key(key, erasure.trajectory_id)
            await self._erase(erasure, partition)
        if caught.letter is not None and tick is not None:  # a failed tick: look again later, not never
            self.index.set(partition, tick.trajectory_id, self.clock() + TICK_RETRY_S)

    async def join(
        self, redacted: Redacted, topic: str, partition: int, offset: int, key: bytes | None
    ) -> None:
        """Join an event the redact stage just published (with its wire bytes) from record ``offset`` of
        ``topic``; a failure dead-letters the redacted bytes, never the raw record. The redact stage
        checked the event against the erasure guard in this same pass, and nothing that changes the
        guard's answer (an erasure, another record) runs in between: it is not checked again."""
        event, body = redacted
        self.counters.inc("join_in")
        async with self.dead_letters.catching(topic, partition, offset, key, body):
            if isinstance(event, StepEvent | TrajectoryEndEvent) and event.governance.redaction != "redacted":
                raise RejectedEvent("an unredacted event reached the join", "NotRedacted")
            await self._apply(event, body, partition)

    # ------------------------------------------------------------------ records

    async def _apply(
        self, event: StepEvent | TrajectoryEndEvent | RewardEvent, received: bytes, partition: int
    ) -> None:
        """``received``: the record's bytes as they came; a step body is stored as received."""
        now = self.clock()
        tid = event.trajectory_id
        state = load_state(self.states, tid)
        rules = self.cfg.rewards
        tr: Transition
        if isinstance(event, StepEvent):
            tr = apply_step(state, event, now, rules, self.cfg.eligibility)
            if tr.store_step:
                store_step(self.steps, event, received)
        elif isinstance(event, RewardEvent):
            tr = apply_reward(state, event, now, rules)
        else:
            tr = apply_end(state, event, now, self.cfg.eligibility)
        if tr.purge_steps and state is not None:
            delete_keys(self.steps, [step_key(tid, e) for e in state.stored_step_ids])
            self.counters.inc("dropped_content")
        self.counters.inc("duplicates" if not tr.changed else event.event_type)
        new = await self._maybe_emit(tr.state, partition, now)
        self._save(new, partition)

    async def _tick(self, tid: str, partition: int) -> None:
        now = self.clock()
        state = load_state(self.states, tid)
        if state is None:
            self.index.set(partition, tid, None)
            return
        emitted = await self._maybe_emit(state, partition, now)
        if emitted is not state:
            self._save(emitted, partition)
        elif is_orphaned(state, self.cfg.rewards, now):
            await self._dead_letter_orphan(state)
            self._delete(state, partition)
        elif is_expired(state, self.cfg.rewards, now):
            self._delete(state, partition)
            self.counters.inc("expired")
        else:
            self.index.set(partition, tid, next_due_at(state, self.cfg.rewards))

    # ------------------------------------------------------------------ erasure

    async def _erase(self, erasure: ErasureEvent, partition: int) -> None:
        now = self.clock()
        targets: list[tuple[str, str]] = []  # (trajectory id, owner)
        if erasure.trajectory_id is not None:
            state = load_state(self.states, erasure.trajectory_id)
            if state is None or not state.erased:
                owner = (
                    state.tenant
                    if state is not None
                    else (trajectory_owner(erasure.trajectory_id) or erasure.tenant_scope or "")
                )
                targets.append((erasure.trajectory_id, owner))
        else:
            self.guard.remember_rule(erasure)
            for value in list(self.states.values()):
                if peek_due(value)[0] != partition:
                    continue
                state = decode_state(value)
                if not state.erased and erasure.matches(
                    state.trajectory_id, state.tenant, state.facts.subject_ids
                ):
                    targets.append((state.trajectory_id, state.tenant))
        for tid, owner in targets:
            state = load_state(self.states, tid)
            step_keys = [
                step_record_key(tid, e).encode()
                for e in sorted({e for sent in (state.sent_steps if state else {}).values() for e in sent})
            ]
            self._purge(tid, owner, partition)
            marker = JoinState.erased_marker(tid, owner, now, self.cfg.rewards.keep_erased_s)
            self._save(marker, partition)
            key = tid.encode()
            # after anything this partition emitted for it: the compacted topics end on a tombstone
            await self.emissions_delivered()
            # every key written for it: its step records' and then its own
            await deliver_all(
                [
                    (topic, k, None, partition)
                    for topic in (self.audited_topic, self.train_topic)
                    for k in [*step_keys, key]
                ]
            )
            self.counters.inc("erased")
        if targets and self.compact is not None:
            await self.compact(partition)
        log.info(
            "erasure %s: %d trajectories purged on partition %d", erasure.erasure_id, len(targets), partition
        )

    def _purge(self, tid: str, owner: str, partition: int) -> None:
        state = load_state(self.states, tid)
        if state is not None:
            delete_keys(self.steps, [step_key(tid, e) for e in state.step_ids])
        delete_keys(self.states, [tid.encode()])
        delete_keys(self.placeholders, [placeholder_key(owner, tid)])
        self.index.set(partition, tid, None)

    # ------------------------------------------------------------------ emission

    async def _maybe_emit(self, state: JoinState, partition: int, now: float) -> JoinState:
        plan = plan_emission(state, self.cfg.rewards, now)
        if plan is None:
            return state
        tid = state.trajectory_id
        stored, missing = load_step_bodies(self.steps, tid, state.stored_step_ids)
        if missing:
            log.error("trajectory %s: %d stored step bodies missing", tid, len(missing))
        steps = [stored[e][0] for e in state.stored_step_ids if e in stored]
        emission = build_emission(
            state, steps, plan, self.cfg.rewards, self.cfg.eligibility, self.cfg.replay, now
        )
        topics = [("audited", self.audited_topic)]
        if emission.to_train:
            topics.append(("train", self.train_topic))
        records: list[tuple[Any, bytes, bytes | None, int]] = []
        sent = dict(state.sent_steps)
        payloads = step_payloads(emission.trajectory, stored)
        for role, topic in topics:
            # steps first, then the header, all on the trajectory's partition: a reader of the topic has
            # every step a header references before the header
            out = on_topic(emission.trajectory, sent.get(role, {}), payloads)
            records += [(topic, step_record_key(tid, e).encode(), None, partition) for e in out.withdrawn]
            records += [
                (topic, step_record_key(tid, e).encode(), body, partition) for e, body in out.step_records
            ]
            records.append((topic, tid.encode(), encode(out.header), partition))
            sent[role] = out.sent
        # the state saying so is stored only once the broker has it (``emissions_delivered``): a crash
        # re-emits the version and its step records (same ids), never skips them
        self._unacked.extend(await send_all(records))
        self.counters.inc("emitted")
        self.counters.inc("to_train" if emission.to_train else "audit_only")
        decision = emission.trajectory.governance.eligibility
        assert decision is not None
        done = mark_emitted(state, plan.version, decision, now)
        if done.purge_steps:
            delete_keys(self.steps, [step_key(tid, e) for e in state.stored_step_ids])
            self.counters.inc("dropped_content")
        return done.state.model_copy(update={"sent_steps": sent})

    async def _dead_letter_orphan(self, state: JoinState) -> None:
        reason = (
            f"orphan reward: no step of trajectory {state.trajectory_id} arrived within "
            f"{self.cfg.rewards.orphan_ttl_s:g}s"
        )
        for reward in state.rewards:
            event = RewardEvent(trajectory_id=state.trajectory_id, tenant=state.tenant, reward=reward)
            letter = build_dead_letter(
                STAGE,
                reason,
                "OrphanReward",
                source_topic=self.cfg.topics.name("rewards_raw"),
                source_partition=None,
                source_offset=None,
                key=state.trajectory_id.encode(),
                value=encode(event),
            )
            await self.dead_letters.publish(letter, state.trajectory_id.encode())
        self.counters.inc("orphans")

    # ------------------------------------------------------------------ state

    def _save(self, state: JoinState, partition: int) -> None:
        due = next_due_at(state, self.cfg.rewards)
        save_state(self.states, state, partition, due)
        self.index.set(partition, state.trajectory_id, due)

    def _delete(self, state: JoinState, partition: int) -> None:
        tid = state.trajectory_id
        delete_keys(self.steps, [step_key(tid, e) for e in state.stored_step_ids])
        delete_keys(self.states, [tid.encode()])
        delete_keys(self.placeholders, [placeholder_key(state.tenant, tid)])
        self.index.set(partition, tid, None)
