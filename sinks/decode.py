"""What one audited trajectory record adds to a batch: its rows by table, or one dead-letter row. Pure.

``trajectory_outcome`` decodes a record of the audited topic (not a tombstone) and decides: rows of
every table for a stored trajectory version, or the dead-letter row that says why it is not stored
(invalid, another event type, a key that is not its trajectory id, unredacted steps). A record the
mirror types accept takes the fast path (``sinks.received``: validated once, step bytes stored as
received); anything else, and a record whose steps recorded credential headers (scrubbed, which changes
their JSON), goes through the model. A step record of layout 2.0 (its key names the trajectory and the
step) is one ``steps`` row, the step's JSON cut out of the record as received. No state is read or written: the batch (``sinks.batch``) applies each outcome in order.

    pytest tests/sinks/test_batch.py tests/sinks/test_received.py
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from pydantic import ValidationError

from sinks.flatten import (
    Row,
    SourceRecord,
    invalid_row,
    rows_of,
    scrub_headers,
    step_record_rows,
    trajectory_rows,
    unredacted_steps,
)
from sinks.received import ReceivedTrajectory, receive_step_record, receive_trajectory
from sluice.errors import validation_summary
from sluice.events import DeadLetter, Trajectory, TrajectoryStep, decode, encode, step_bytes_of
from sluice.step_refs import is_step_record_key, step_record_key

E = TypeVar("E", Trajectory, TrajectoryStep, DeadLetter)


@dataclass(frozen=True, slots=True)
class TrajectoryRules:
    """What deciding on a trajectory record depends on (the sink's settings)."""

    sensitive_headers: tuple[str, ...] = ()  # recorded headers dropped before storing (case-insensitive)
    require_redacted: bool = True  # refuse trajectories with unredacted steps
    banned: frozenset[str] = field(init=False)  # ``sensitive_headers`` lower-cased, built once

    def __post_init__(self) -> None:
        object.__setattr__(self, "banned", frozenset(h.lower() for h in self.sensitive_headers))


@dataclass(slots=True)
class Outcome:
    """Rows a record adds, by table; ``stored`` False: the one row is a dead letter saying why not;
    ``step_record``: what was stored is a step record (layout 2.0), not a trajectory version."""

    rows: dict[str, list[Row]]
    stored: bool
    step_record: bool = False


def validation_reason(err: ValidationError, limit: int = 5) -> str:
    """Pydantic errors as one line, without the offending input values (they may hold PII)."""
    return "invalid record: " + validation_summary(err, limit)


def decode_as(rec: SourceRecord, kind: type[E], what: str) -> E | tuple[str, str]:
    """The record's event when it decodes to a ``kind`` (``what`` names one); else why not: the reason
    and the error type of its dead letter."""
    try:
        event = decode(rec.value or b"")
    except ValidationError as err:
        return validation_reason(err), "ValidationError"
    if not isinstance(event, kind):
        return f"expected {what} on {rec.topic}, got a {event.event_type} event", "WrongEventType"
    return event


def _refused(
    rec: SourceRecord, reason: str, error_type: str, now: datetime, withhold: bool = False
) -> Outcome:
    """The record as a dead letter (``withhold``: keep only the hash and size of its bytes)."""
    row = invalid_row(rec, reason, error_type, now, withhold_original=withhold)
    return Outcome({"dead_letters": [row]}, stored=False)


def _key_mismatch(rec: SourceRecord, trajectory_id: str, now: datetime) -> Outcome | None:
    if rec.key is None or rec.key == trajectory_id:
        return None
    reason = f"record key {rec.key!r} is not its trajectory_id {trajectory_id!r}"
    return _refused(rec, reason, "KeyMismatch", now)


def _unredacted(rec: SourceRecord, raw: list[int], now: datetime) -> Outcome:
    reason = f"unredacted steps {raw[:10]} refused: raw traffic never reaches the store"
    return _refused(rec, reason, "Unredacted", now, withhold=True)


def _has_headers(steps: Sequence[Any], banned: frozenset[str]) -> bool:
    """Whether any step recorded a header named like one of ``banned`` (lower-case names)."""
    return bool(banned) and any(k.lower() in banned for s in steps for k in s.metadata.request_headers)


def trajectory_outcome(rec: SourceRecord, rules: TrajectoryRules, now: datetime) -> Outcome:
    """What the audited record ``rec`` (a value, not a tombstone) adds to a batch."""
    if is_step_record_key(rec.key):
        return _step_outcome(rec, rules, now)
    received = receive_trajectory(rec.value or b"")
    if received is not None and not _has_headers(received.steps, rules.banned):
        return _received_outcome(received, rec, rules, now)
    return _model_outcome(rec, rules, now)


def _received_outcome(
    received: ReceivedTrajectory, rec: SourceRecord, rules: TrajectoryRules, now: datetime
) -> Outcome:
    t, steps = received.trajectory, received.steps
    mismatch = _key_mismatch(rec, t.trajectory_id, now)
    if mismatch is not None:
        return mismatch
    raw = unredacted_steps(t, steps) if rules.require_redacted else []
    if raw:
        return _unredacted(rec, raw, now)
    rows = rows_of(t, steps, received.header_json, received.step_json, rec, now)
    return Outcome(rows, stored=True)


def _model_outcome(rec: SourceRecord, rules: TrajectoryRules, now: datetime) -> Outcome:
    event = decode_as(rec, Trajectory, "a trajectory")
    if isinstance(event, tuple):
        return _refused(rec, *event, now)
    mismatch = _key_mismatch(rec, event.trajectory_id, now)
    if mismatch is not None:
        return mismatch
    raw = unredacted_steps(event, event.steps) if rules.require_redacted else []
    if raw:
        return _unredacted(rec, raw, now)
    if rules.sensitive_headers:
        steps = [scrub_headers(s, rules.sensitive_headers) for s in event.steps]
        event = event.model_copy(update={"steps": steps})
    return Outcome(trajectory_rows(event, rec, now), stored=True)


def _step_outcome(rec: SourceRecord, rules: TrajectoryRules, now: datetime) -> Outcome:
    """A step record (layout 2.0, keyed ``step_record_key``): its step stored as received, unless its
    recorded headers had to be scrubbed. Decoded once by the mirror types when it can be
    (``receive_step_record``), else by the model, which explains a refusal."""
    received = receive_step_record(rec.value or b"")
    if received is not None:
        record, step = received.record, received.step
        if not _has_headers((step,), rules.banned):
            refused = _step_refused(rec, record, step, rules, now)
            if refused is not None:
                return refused
            return Outcome(step_record_rows(record, step, received.step_json, now), True, True)
    event = decode_as(rec, TrajectoryStep, "a trajectory step")
    if isinstance(event, tuple):
        return _refused(rec, *event, now)
    refused = _step_refused(rec, event, event.step, rules, now)
    if refused is not None:
        return refused
    step_json = step_bytes_of(rec.value or b"")
    if _has_headers([event.step], rules.banned):
        event = event.model_copy(update={"step": scrub_headers(event.step, rules.sensitive_headers)})
        step_json = None
    if step_json is None:
        step_json = encode(event.step)
    return Outcome(
        step_record_rows(event, event.step, step_json.decode(), now), stored=True, step_record=True
    )


def _step_refused(
    rec: SourceRecord, t: Any, step: Any, rules: TrajectoryRules, now: datetime
) -> Outcome | None:
    """Why a step record (``t``, its ``step``: models or their wire mirrors) is not stored, or None."""
    if rec.key != step_record_key(t.trajectory_id, step.event_id):
        reason = f"record key {rec.key!r} is not the step record key of its trajectory and step"
        return _refused(rec, reason, "KeyMismatch", now)
    if step.trajectory_id != t.trajectory_id:
        return _refused(rec, "the step belongs to another trajectory", "KeyMismatch", now)
    if rules.require_redacted and step.governance.redaction != "redacted":
        return _unredacted(rec, [step.step_index], now)
    return None
