"""The msgspec mirror of the event models is never laxer than the models, and reads the same values.

Differential: every record below is decided by both the mirror (``receive_trajectory``) and the model
(``sluice.events.decode``). Whenever the mirror accepts, the model must accept too, and the rows the sink
builds from either must be the same (but for the stored JSON text: the fast path keeps the bytes
received). The records are valid trajectories, and every one-place mutation of them: each value replaced
by values of other types and edge values, each field dropped, an unknown field added to each object.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import BaseModel, Field, ValidationError, field_validator

from sinks.flatten import SourceRecord, rows_of, trajectory_rows
from sinks.received import receive_trajectory
from sinks.wire_mirror import UnsupportedSchema, _Mirror, wire_mirror
from sluice.events import Message, Reward, StepEvent, ToolCall, Trajectory, decode, encode
from sluice.events import base as events_base
from testing.samples import make_trajectory

NOW = datetime(2026, 11, 2, tzinfo=UTC)
REC = SourceRecord("a", 1, 9, None, b"")

# Replacements tried at every value of a record: other JSON types, coercible spellings, edge numbers.
REPLACEMENTS: list[Any] = [
    None,
    "",
    "1",
    "true",
    1,
    0,
    -1,
    1.0,
    0.5,
    2**70,
    -(2**70),
    1e300,
    True,
    False,
    [],
    [1],
    ["x"],
    {},
    {"k": 1},
    "2026-11-01T00:00:01Z",
    "2026-11-01",
    1767225600,
]

DATETIMES = [
    "2026-11-01T00:00:01Z",
    "2026-11-01t00:00:01z",
    "2026-11-01 00:00:01Z",
    "2026-11-01T00:00:01",
    "2026-11-01T00:00:01.1234567Z",
    "2026-11-01T00:00:01.999999999Z",
    "2026-11-01T23:59:60Z",
    "2026-11-01T00:00:01+05:30",
    "2026-11-01T00:00:01+0530",
    "2026-11-01T00:00:01-00:00",
    "2026-11-01T24:00:00Z",
    "2026-02-30T00:00:00Z",
    "2026-11-01",
    "2026-11-01T00:00Z",
    "2026-11-01T00:00:01.Z",
    "20261101T000001Z",
    "2026-11-01T00:00:01+25:00",
    "9999-12-31T23:59:59.9999999Z",
    "2026-11-01T00:00:01,5Z",
    "2026-W44-1",
    "1767225600",
]


def _samples() -> list[Trajectory]:
    plain = make_trajectory("t-plain", n_steps=2, reward=0.5, subject_ids=["u1"], session_id="s1")
    rich = make_trajectory("t-rich", tenant="globex", n_steps=2, decision="audit_only", grade="approximate")
    step = rich.steps[1]
    step.rewards.append(Reward(reward_id="r1", value=1e-7, step_index=1, source="judge"))
    step.observation.messages.append(Message(role="user", content=[{"type": "text", "text": "hé"}], tag="x"))
    step.action.choices[0].message.tool_calls = [ToolCall(id="c1", name="grep", arguments='{"q": 1}')]
    step.metadata.request_headers["user-agent"] = "agent/1"
    step.metadata.time_to_first_token_ms = 3.0
    step.action_result.error, step.action_result.status_code = "upstream 500", 500
    return [plain, rich]


def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value (objects and arrays included) in a decoded JSON document."""
    out = [path] if path else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*path, i))
    return out


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    doc = json.loads(json.dumps(doc))
    node = doc
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    return doc


def _drop(doc: Any, path: tuple[Any, ...]) -> Any:
    doc = json.loads(json.dumps(doc))
    node = doc
    for p in path[:-1]:
        node = node[p]
    del node[path[-1]]
    return doc


def _mutations(t: Trajectory) -> list[bytes]:
    doc = json.loads(encode(t))
    out = []
    for path in _paths(doc):
        out += [_set(doc, path, r) for r in REPLACEMENTS]
        if isinstance(path[-1], str):
            out.append(_drop(doc, path))
        parent = doc
        for p in path:
            parent = parent[p]
        if isinstance(parent, dict):
            out.append(_set(doc, (*path, "surprise_field"), 1))
    return [json.dumps(d, separators=(",", ":"), ensure_ascii=False).encode() for d in out]


def _model(value: bytes) -> Trajectory | None:
    try:
        event = decode(value)
    except ValidationError:
        return None
    return event if isinstance(event, Trajectory) else None


def _comparable(v: Any) -> Any:
    """A datetime that a default factory filled in at decode time (a dropped field) is 'now' on both
    sides, a few microseconds apart."""
    if isinstance(v, datetime) and v.tzinfo is not None and abs((datetime.now(UTC) - v).total_seconds()) < 60:
        return "filled in now"
    return v


def _without_json(tables: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    drop = ("record", "content_hash")
    return {
        t: [{k: _comparable(v) for k, v in r.items() if k not in drop} for r in rows]
        for t, rows in tables.items()
    }


def _check(value: bytes) -> tuple[bool, bool]:
    """(mirror accepts, model accepts), after asserting the mirror is not laxer and reads the same."""
    got = receive_trajectory(value)
    model = _model(value)
    if got is not None:
        assert model is not None, value[:300]
        fast = rows_of(got.trajectory, got.steps, got.header_json, got.step_json, REC, NOW)
        assert _without_json(fast) == _without_json(trajectory_rows(model, REC, NOW)), value[:300]
        stored = [StepEvent.model_validate_json(s) for s in got.step_json]  # read back as stored
        assert [s.model_dump(exclude_unset=True) for s in stored] == [
            s.model_dump(exclude_unset=True) for s in model.steps
        ]
    return got is not None, model is not None


def test_the_schema_is_mirrored() -> None:
    assert wire_mirror() is not None


def test_valid_records_take_the_fast_path() -> None:
    for t in _samples():
        assert _check(encode(t)) == (True, True), t.trajectory_id


@pytest.mark.parametrize("index", [0, 1])
def test_mutated_records_the_mirror_accepts_the_model_accepts_alike(
    index: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a dropped id is filled in by the same factory on both sides (``new_id``): make it give the same id
    monkeypatch.setattr(events_base, "os", SimpleNamespace(urandom=lambda n: bytes([7]) * n))
    t = _samples()[index]
    decided = [_check(v) for v in _mutations(t)]
    # the mutations exercise both sides: some are refused, and many still valid ones take the fast path
    assert len(decided) > 1000
    assert any(not m for _, m in decided) and sum(f for f, _ in decided) > 100


def test_datetime_spellings_read_as_the_model_reads_them() -> None:
    wire = encode(_samples()[0]).decode()
    stamp = json.loads(wire)["steps"][0]["created_at"]
    for spelling in DATETIMES:
        value = wire.replace(f'"created_at":"{stamp}"', f'"created_at":{json.dumps(spelling)}', 1).encode()
        _check(value)


def test_repeated_keys_read_as_the_model_reads_them() -> None:
    wire = encode(_samples()[0])
    cases = [
        (b'"step_index":0', b'"step_index":0,"step_index":"x"'),
        (b'"step_index":0', b'"step_index":"x","step_index":0'),
        (b'"step_index":0', b'"step_index":0,"step_index":5'),
        (b'"tenant":"acme"', b'"tenant":"acme","tenant":"other"'),
        (b'"redaction":"redacted"', b'"redaction":"redacted","redaction":"raw"'),
        (b'"redaction":"redacted"', b'"redaction":"raw","redaction":"redacted"'),
    ]
    for old, new in cases:
        _check(wire.replace(old, new, 1))


def test_a_schema_the_mirror_cannot_reproduce_is_refused() -> None:
    class Checked(BaseModel):
        n: int

        @field_validator("n")
        @classmethod
        def positive(cls, v: int) -> int:
            return v

    class Aliased(BaseModel):
        n: int = Field(alias="N")

    for model in (Checked, Aliased):
        with pytest.raises(UnsupportedSchema):
            _Mirror().struct(model.__pydantic_core_schema__)
