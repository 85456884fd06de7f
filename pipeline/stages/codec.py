"""Decoding stage input: raw bytes in, one of the expected event types out, or a ``RejectedEvent``.

Stages consume raw bytes (Faust ``value_serializer="raw"``) and decode here, so a record that is not
JSON, fails validation, has the wrong type or a key other than its trajectory id is rejected with a
clear reason instead of killing the agent.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ValidationError

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
