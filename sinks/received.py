"""Decode an audited record once and keep the bytes it came in: the sink's fast path for trajectories.

The stages publish trajectories in their wire form (``sluice.events.encode``: compact JSON without
nulls). ``receive_trajectory`` decodes and validates such a record in one pass of msgspec's decoder,
with types mirrored from the models (``sinks.wire_mirror``), and returns its fields, its steps, the
header JSON (the record less its ``steps`` field) and each step's JSON exactly as received, cut out of
the record (``msgspec.Raw``), so nothing is encoded again.

The mirror is never laxer than the model, so what is stored is what the model path would store: every
step's JSON is one the model accepts with the same values, and for a record in wire form the bytes are
exactly the model's dump. A record is taken only when its ``steps`` array, written compactly, is followed
by another field and the rest of the record has no other ``"steps"`` key, so the cut is unambiguous.
Anything else (an invalid record, another event type, a pretty-printed record, a duplicate ``steps``
key) gets ``None`` and goes through the model, which decides and explains as before.

A step record (layout 2.0, ``TrajectoryStep``) takes the same path with ``receive_step_record``: its
fields and its step decoded once, the step's JSON the bytes ``encode_step_record`` spliced in.

    pytest tests/sinks/test_received.py
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from sinks.wire_mirror import wire_mirror

_STEPS_KEY = b'"steps":'
_STEP_KEY = b',"step":'  # how ``encode_step_record`` introduces a record's step (its last field)


@dataclass(slots=True)
class ReceivedTrajectory:
    """A trajectory record decoded by the mirror types (same attribute names as the models), its JSON."""

    trajectory: Any  # the trajectory's fields; its ``steps`` are raw bytes, decoded in ``steps``
    steps: list[Any]
    header_json: str  # the record without its steps (what the model path stores for the version)
    step_json: list[str]  # each step as received, in order


def receive_trajectory(value: bytes) -> ReceivedTrajectory | None:
    """``value`` decoded and validated once, when it is a valid trajectory whose steps can be cut out of
    it as received (see the module docstring); else None (the model then decides)."""
    decoders = wire_mirror()
    if decoders is None:
        return None
    try:
        head = decoders.header.decode(value)
        steps = [decoders.step.decode(r) for r in head.steps]
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    raw = [bytes(r) for r in head.steps]
    header = _header_without(value, raw)
    if header is None:
        return None
    return ReceivedTrajectory(head, steps, header.decode(), [s.decode() for s in raw])


@dataclass(slots=True)
class ReceivedStep:
    """A step record decoded by the mirror types: its fields (``record.step`` raw), its step, its JSON."""

    record: Any
    step: Any
    step_json: str  # the step as received


def receive_step_record(value: bytes) -> ReceivedStep | None:
    """``value`` decoded and validated once, when it is a valid step record whose step is the last field,
    written as ``encode_step_record`` writes it (so the bytes cut out are the step the mirror read); else
    None (the model then decides)."""
    decoders = wire_mirror()
    if decoders is None:
        return None
    try:
        record = decoders.step_record.decode(value)
        step = decoders.step.decode(record.step)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    raw = record.step  # a view of ``value``: compared and decoded in place, never copied
    # the step is the last field, right after its key: what ``step_bytes_of`` cuts out is what was read
    end = len(value) - 1
    start = end - len(raw)
    if not (value.endswith(b"}") and value.startswith(_STEP_KEY, start - 8) and value.startswith(raw, start)):
        return None
    return ReceivedStep(record, step, str(raw, "utf-8"))


def _header_without(value: bytes, steps: list[bytes]) -> bytes | None:
    """``value`` less its ``steps`` field, when that field is ``steps`` written compactly, followed by
    another field, and no other ``"steps"`` key is left outside it (a duplicate or nested one: the
    validator and the cut might then disagree on which array they read); else None."""
    at = value.find(_STEPS_KEY + b"[")
    if at < 0:
        return None
    pos = at + len(_STEPS_KEY) + 1
    for i, step in enumerate(steps):
        if i:
            if value[pos : pos + 1] != b",":
                return None
            pos += 1
        if not value.startswith(step, pos):
            return None
        pos += len(step)
    if not value.startswith(b"],", pos):
        return None
    header = value[:at] + value[pos + 2 :]
    return header if _STEPS_KEY not in header else None
