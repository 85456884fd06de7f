"""How the stages lay out their Faust tables (raw bytes in, raw bytes out).

- ``placeholders``: owner-scoped trajectory id (``placeholder_key``) -> ``PlaceholderState`` JSON (keyed
  digests and numbers, no values). Never the bare id: two tenants' trajectories never share numbering.
- ``join_state``: trajectory id -> ``b"<partition>|<due>|"`` + ``JoinState`` JSON. The prefix lets the
  timer rebuild its due index after a rebalance by reading a few bytes per trajectory instead of
  parsing every state.
- ``join_steps``: ``<trajectory id> \\x1f <step event id>`` -> the redacted ``StepEvent`` as on the wire.
  One record per step: appending a step never rewrites the others.

On a ``WriteBehindTable`` the values written here are held decoded until the next flush (the state, the
placeholders and the step as objects), and reads of them skip parsing.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import TypeVar

from governance.redaction import PlaceholderState
from governance.reward_join import JoinState
from pipeline.stages.write_behind import WriteBehindTable
from sluice.events import StepEvent, decode, scoped_trajectory_id, trajectory_owner

Table = MutableMapping[bytes, bytes]
SEP = b"\x1f"
T = TypeVar("T")


def _decoded(table: Table, key: bytes, parse: Callable[[bytes], T]) -> T | None:
    if isinstance(table, WriteBehindTable):
        return table.get_decoded(key, parse)
    value = table.get(key)
    return None if value is None else parse(value)


def step_key(trajectory_id: str, event_id: str) -> bytes:
    return trajectory_id.encode() + SEP + event_id.encode()


def encode_state(state: JoinState, partition: int, due_at: float | None) -> bytes:
    due = b"-" if due_at is None else repr(float(due_at)).encode()
    return b"%d|%s|" % (partition, due) + state.model_dump_json(exclude_defaults=True).encode()


def peek_due(value: bytes) -> tuple[int, float | None]:
    """(partition, due time) of an encoded state, without parsing it."""
    partition, due, _ = value.split(b"|", 2)
    return int(partition), None if due == b"-" else float(due)


def is_erased_value(value: bytes) -> bool:
    """Whether an encoded state is an erased trajectory's marker, without parsing it (inside JSON strings
    a quote is escaped, so text can not fake the field)."""
    return b'"erased_until":' in value


def decode_state(value: bytes) -> JoinState:
    return JoinState.model_validate_json(value.split(b"|", 2)[2])


def load_state(table: Table, trajectory_id: str) -> JoinState | None:
    return _decoded(table, trajectory_id.encode(), decode_state)


def held_state(table: Table, trajectory_id: str) -> JoinState | None:
    """The state as the write-behind table holds it decoded, if it does (no bytes are made or parsed)."""
    return table.held(trajectory_id.encode()) if isinstance(table, WriteBehindTable) else None


def save_state(table: Table, state: JoinState, partition: int, due_at: float | None) -> None:
    key = state.trajectory_id.encode()
    if isinstance(table, WriteBehindTable):
        table.put(key, state, encode=lambda s: encode_state(s, partition, due_at))
    else:
        table[key] = encode_state(state, partition, due_at)


def placeholder_key(tenant: str, trajectory_id: str) -> bytes:
    """The placeholders table's key: the trajectory id scoped by its owner (ids from the proxy already are)."""
    scoped = trajectory_id if trajectory_owner(trajectory_id) else scoped_trajectory_id(tenant, trajectory_id)
    return scoped.encode()


def _encode_placeholders(state: PlaceholderState) -> bytes:
    return state.model_dump_json().encode()


def load_placeholders(table: Table, tenant: str, trajectory_id: str) -> PlaceholderState | None:
    return _decoded(table, placeholder_key(tenant, trajectory_id), PlaceholderState.model_validate_json)


def store_placeholders(table: Table, tenant: str, trajectory_id: str, state: PlaceholderState) -> None:
    key = placeholder_key(tenant, trajectory_id)
    if isinstance(table, WriteBehindTable):
        table.put(key, state, encode=_encode_placeholders)
    else:
        table[key] = _encode_placeholders(state)


def store_step(table: Table, step: StepEvent, body: bytes) -> None:
    """A step's body as received (``body`` is ``step`` on the wire)."""
    key = step_key(step.trajectory_id, step.event_id)
    if isinstance(table, WriteBehindTable):
        table.put(key, step, data=body)
    else:
        table[key] = body


def _decode_step(value: bytes) -> StepEvent:
    step = decode(value)
    assert isinstance(step, StepEvent)
    return step


def load_steps(table: Table, trajectory_id: str, event_ids: list[str]) -> tuple[list[StepEvent], list[str]]:
    """The stored step bodies, and the ids whose body is missing."""
    steps: list[StepEvent] = []
    missing: list[str] = []
    for event_id in event_ids:
        step = _decoded(table, step_key(trajectory_id, event_id), _decode_step)
        if step is None:
            missing.append(event_id)
        else:
            steps.append(step)
    return steps, missing


def load_step_bodies(
    table: Table, trajectory_id: str, event_ids: list[str]
) -> tuple[dict[str, tuple[StepEvent, bytes]], list[str]]:
    """The stored steps with their bytes as received, by event id, and the ids whose body is missing."""
    found: dict[str, tuple[StepEvent, bytes]] = {}
    missing: list[str] = []
    for event_id in event_ids:
        key = step_key(trajectory_id, event_id)
        body = table.get(key)
        if body is None:
            missing.append(event_id)
            continue
        held = table.held(key) if isinstance(table, WriteBehindTable) else None
        found[event_id] = (held if isinstance(held, StepEvent) else _decode_step(body), body)
    return found, missing


def delete_keys(table: Table, keys: list[bytes]) -> None:
    for key in keys:
        if key in table:
            del table[key]
