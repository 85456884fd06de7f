"""Decoding stage input: raw bytes in, one of the expected event types out, or a ``RejectedEvent``.

Stages consume raw bytes (Faust ``value_serializer="raw"``) and decode here, so a record that is not
JSON, fails validation, has the wrong type or a key other than its trajectory id is rejected with a
clear reason instead of killing the agent.

``wire_object`` is the redact stage's fast path: the record's JSON object, decoded once, when its
envelope (event type, trajectory id, tenant) is well formed; the redactor walks it and validates it
once. Anything else takes ``decode_event``, which names what is wrong.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import from_json

from pipeline.stages.deadletter import describe_error
from pipeline.stages.exceptions import RejectedEvent
from sluice.events import decode, trajectory_owner

T = TypeVar("T", bound=BaseModel)


def decode_event(value: bytes | None, allowed: tuple[type[T], ...]) -> T:
    if value is None:
        raise RejectedEvent("empty record (no value)", "EmptyRecord")
    try:
        event = decode(value)
    except (ValidationError, ValueError) as exc:
        reason, error_type = describe_error(exc)
        raise RejectedEvent(reason, error_type) from None
    if not isinstance(event, allowed):
        names = ", ".join(t.__name__ for t in allowed)
        raise RejectedEvent(
            f"unexpected event type {type(event).__name__} (expected {names})", "WrongEventType"
        )
    return event


def wire_object(value: bytes | None, event_types: frozenset[str]) -> dict[str, Any] | None:
    """The record's JSON object when it is one with an ``event_type`` in ``event_types`` and string
    ``trajectory_id`` and ``tenant``; None otherwise (``decode_event`` then says why, or decodes it)."""
    if not value:
        return None
    try:
        data = from_json(value)
    except ValueError:
        return None
    if (
        not isinstance(data, dict)
        or data.get("event_type") not in event_types
        or not isinstance(data.get("trajectory_id"), str)
        or not isinstance(data.get("tenant"), str)
    ):
        return None
    return data


def check_key(key: bytes | None, trajectory_id: str) -> None:
    """Joins need every record keyed by its trajectory id (same partition for a trajectory's events)."""
    if key is None:
        raise RejectedEvent("record has no key: events must be keyed by trajectory_id", "BadKey")
    if key != trajectory_id.encode():
        raise RejectedEvent("record key does not match its trajectory_id", "BadKey")


def check_owner(trajectory_id: str, tenant: str) -> None:
    """A scoped trajectory id names its owner: an event of another tenant under it is refused."""
    owner = trajectory_owner(trajectory_id)
    if owner is not None and owner != tenant:
        raise RejectedEvent("trajectory id belongs to another tenant", "TenantMismatch")
