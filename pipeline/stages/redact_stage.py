"""The redact stage adapter: raw steps, ends and rewards in; redacted events out on steps.redacted.

Thin: decode the record's JSON object once and check its envelope (``codec``), fetch the trajectory's
placeholder state from its table, call ``Redactor.redact_data`` (one walk, one validation), send the
result to the same partition number of the redacted topic, store the new state. Reward events (critiques are text) are redacted here too and travel on the redacted topic
with the steps, so the join only ever sees redacted text. Anything that fails goes to the dead-letter
topic and the stage keeps going.

Events of erased data (``ErasureGuard``) are dropped before they are sent and counted, never forwarded
nor dead-lettered; an event whose trajectory id names another tenant than its own is dead-lettered
(``TenantMismatch``), so one tenant can never write into another's trajectory.

Fail closed: when a decodable event's redaction raises or passes ``redaction.step_timeout_s``, the
stage still publishes the event, withheld (``Redactor.withhold``: every text replaced by the drop
marker, the failure named in its redaction report), so its trajectory stays whole and eligibility
keeps it out of training with the reason; the raw record goes to the dead-letter topic (as sensitive
as the raw topic) for a later retry.

The state is written back on every event, even unchanged: a redelivered record (at-least-once) thereby
re-sends a changelog write that a crash may have lost, so placeholder numbers stay stable after moves.
"""

from __future__ import annotations

import logging
from dataclasses import InitVar, dataclass, field
from typing import Any

from governance.redaction import Redactor
from governance.redaction.exceptions import RedactionTimeout
from pipeline.stages.codec import check_key, check_owner, decode_event, wire_object
from pipeline.stages.counters import StageCounters
from pipeline.stages.deadletter import DeadLetterSender
from pipeline.stages.erasure_guard import ErasureGuard
from pipeline.stages.exceptions import RejectedEvent
from pipeline.stages.outputs import send
from pipeline.stages.storage import Table, load_placeholders, store_placeholders
from sluice.events import RewardEvent, StepEvent, TrajectoryEndEvent, encode

STAGE = "redact"
INPUT_MODELS = (StepEvent, TrajectoryEndEvent, RewardEvent)
INPUT_TYPES = frozenset({"step", "end", "reward"})
Redacted = tuple[StepEvent | TrajectoryEndEvent | RewardEvent, bytes]  # the event and its wire bytes
log = logging.getLogger("sluice.stages")


@dataclass(eq=False)
class RedactStage:
    """Redacts raw records with ``redactor`` (placeholders kept per trajectory in ``placeholders``) onto
    ``redacted_topic``; what it cannot redact goes to ``deadletter_topic``."""

    redactor: Redactor
    placeholders: Table
    redacted_topic: Any
    deadletter_topic: InitVar[Any]
    counters: StageCounters
    guard: ErasureGuard
    dead_letters: DeadLetterSender = field(init=False, repr=False)

    def __post_init__(self, deadletter_topic: Any) -> None:
        self.dead_letters = DeadLetterSender(STAGE, deadletter_topic, self.counters)

    async def _withhold(
        self,
        event: StepEvent | TrajectoryEndEvent | RewardEvent,
        exc: Exception,
        topic: str,
        partition: int,
        offset: int,
        key: bytes | None,
        value: bytes | None,
    ) -> Redacted:
        failure = "timeout" if isinstance(exc, RedactionTimeout) else f"error:{type(exc).__name__}"
        withheld = self.redactor.withhold(event, failure)
        body = encode(withheld)
        await send(self.redacted_topic, key=event.trajectory_id.encode(), value=body, partition=partition)
        self.counters.inc("redaction_withheld")
        log.warning("redaction failed (%s) for a %s of %s: published withheld", failure, type(event).__name__,
                    event.trajectory_id)  # fmt: skip
        await self.dead_letters.reject(exc, topic, partition, offset, key, value)
        return withheld, body

    async def handle(
        self, topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None
    ) -> Redacted | None:
        """The redacted (or withheld) event and its wire bytes, as published; None when the record was
        dead-lettered or dropped."""
        self.counters.inc("redact_in")
        out: Redacted | None = None
        async with self.dead_letters.catching(topic, partition, offset, key, value):
            data = wire_object(value, INPUT_TYPES)
            if data is None:  # not a well-formed envelope: decoding names the fault (or it decodes)
                data = decode_event(value, INPUT_MODELS).model_dump()
            tid, tenant = data["trajectory_id"], data["tenant"]
            check_key(key, tid)
            check_owner(tid, tenant)
            state = load_placeholders(self.placeholders, tenant, tid)
            try:
                redacted, new_state = self.redactor.redact_data(data, state)
            except Exception as exc:  # a malformed record is rejected; a failed redaction fails closed
                event = decode_event(value, INPUT_MODELS)
                if self.guard.covers(event):
                    self.counters.inc("erased_dropped")
                    return None
                out = await self._withhold(event, exc, topic, partition, offset, key, value)
                return out
            if not isinstance(redacted, INPUT_MODELS):
                raise RejectedEvent(f"unexpected event type {type(redacted).__name__}", "WrongEventType")
            if not isinstance(redacted, RewardEvent) and redacted.governance.redaction != "redacted":
                raise RejectedEvent("redactor returned an event not marked redacted", "RedactionIncomplete")
            if self.guard.covers(redacted):
                self.counters.inc("erased_dropped")
                return None
            body = encode(redacted)
            # No erasure can land while this record is sent: erasures are records of this same agent's
            # stream, handled one at a time, so the check above still holds for the join that follows.
            await send(self.redacted_topic, key=tid.encode(), value=body, partition=partition)
            if state is not None or new_state.size:
                store_placeholders(self.placeholders, tenant, tid, new_state)
            self.counters.inc("redacted")
            out = (redacted, body)
        return out
