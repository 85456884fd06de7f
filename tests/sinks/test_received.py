"""Trajectories decoded once and stored as received give exactly the rows of the model path."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from governance.reward_join import on_topic, step_payloads
from sinks.batch import BatchTopics, PendingBatch
from sinks.flatten import SourceRecord, rows_of, step_record_rows, trajectory_rows
from sinks.received import receive_step_record, receive_trajectory
from sinks.wire_mirror import wire_mirror
from sluice.events import (
    EligibilityDecision,
    Message,
    Reward,
    ToolCall,
    ToolResult,
    Trajectory,
    TrajectoryStep,
    decode,
    encode,
    step_bytes_of,
)
from sluice.step_refs import step_record_key
from testing.samples import make_trajectory

NOW = datetime(2026, 11, 2, tzinfo=UTC)
REC = SourceRecord("a", 1, 9, None, b"")
TOPICS = BatchTopics(audited="a", deadletter="d")


def _varied() -> list[Trajectory]:
    """Sample trajectories that between them use optional parts, extras, unicode and odd numbers."""
    plain = make_trajectory("t-plain", n_steps=3)
    rewarded = make_trajectory("t-r", n_steps=4, version=3, reward=0.25, subject_ids=["u1"], session_id="s9")
    audit = make_trajectory("t-audit", n_steps=2, decision="audit_only", grade="approximate")
    rich = make_trajectory("t-rich", tenant="globex", n_steps=3, reward=-1.5)
    step = rich.steps[1]
    step.rewards.append(Reward(reward_id="t-rich-s1", value=1e-7, step_index=1, source="judge"))
    step.observation.messages.append(Message(role="user", content='naïve café ✓ "quoted"\n', tag="x"))
    step.action.choices[0].message.tool_calls = [ToolCall(id="c1", name="grep", arguments='{"q": 1}')]
    step.action_result.tool_results.append(ToolResult(tool_call_id="c1", content=[{"type": "text"}]))
    step.metadata.request_headers["user-agent"] = "agent/1"
    step.metadata.cost_usd = 123456789.125
    step.metadata.time_to_first_token_ms = 3.0
    step.action_result.error, step.action_result.status_code = "upstream 500", 500
    rich.steps[2].governance.redaction_report = None
    rich.governance.eligibility = EligibilityDecision(
        decision="train", retention_deadline=datetime(2027, 1, 1, 12, 30, 0, 250000, tzinfo=UTC)
    )
    rich.governance.replay = None
    empty = make_trajectory("t-empty", n_steps=0)
    undecided = make_trajectory("t-old", n_steps=2, reward=1.0).model_copy(update={"train_blockers": None})
    return [plain, rewarded, audit, rich, empty, undecided]


def test_the_schema_mirrors() -> None:
    assert wire_mirror() is not None


def test_received_rows_equal_model_rows() -> None:
    for t in _varied():
        got = receive_trajectory(encode(t))
        assert got is not None, t.trajectory_id
        fast = rows_of(got.trajectory, got.steps, got.header_json, got.step_json, REC, NOW)
        assert fast == trajectory_rows(t, REC, NOW), t.trajectory_id


def test_step_records_are_the_bytes_received() -> None:
    t = _varied()[3]
    value = encode(t)
    got = receive_trajectory(value)
    assert got is not None
    assert all(s.encode() in value for s in got.step_json)
    assert got.step_json == [s.model_dump_json(exclude_none=True) for s in decode(value).steps]


def test_other_spellings_take_the_model_path_and_store_the_same() -> None:
    t = _varied()[1]
    wire = encode(t)
    spaced = json.dumps(json.loads(wire), indent=1).encode()  # valid, not in wire form
    with_null = wire.replace(b'"status":', b'"outcome_note":null,"status":')
    assert receive_trajectory(spaced) is None and receive_trajectory(with_null) is None
    a, b = PendingBatch(TOPICS), PendingBatch(TOPICS)
    a.add(SourceRecord("a", 0, 0, "t-r", wire), NOW)
    b.add(SourceRecord("a", 0, 0, "t-r", spaced), NOW)
    assert a.tables == b.tables and a.counts.trajectories == b.counts.trajectories == 1


def test_invalid_records_still_dead_letter_with_the_model_reason() -> None:
    t = make_trajectory("t-bad", n_steps=2)
    good = encode(t)
    cases = {
        "extra field": good.replace(b'"status":', b'"surprise":1,"status":'),
        "wrong type": good.replace(b'"step_index":1', b'"step_index":"one"'),
        "bad literal": good.replace(b'"redaction":"redacted"', b'"redaction":"maybe"', 1),
        "not json": good[:-3],
    }
    for name, value in cases.items():
        assert receive_trajectory(value) is None, name
        b = PendingBatch(TOPICS)
        b.add(SourceRecord("a", 0, 5, "t-bad", value), NOW)
        (row,) = b.tables["dead_letters"].values()
        assert row["error_type"] == "ValidationError" and row["reason"].startswith("invalid record: "), name
        assert not b.tables["steps"] and b.counts.invalid == 1, name


def test_unredacted_and_mismatched_keys_are_refused_on_the_fast_path() -> None:
    raw = make_trajectory("t-raw", n_steps=2)
    raw.governance.redaction = "raw"
    raw.steps[1].governance.redaction = "raw"
    b = PendingBatch(TOPICS)
    b.add(SourceRecord("a", 0, 0, "t-raw", encode(raw)), NOW)
    b.add(SourceRecord("a", 0, 1, "other", encode(make_trajectory("t-ok"))), NOW)
    reasons = {r["error_type"]: r for r in b.tables["dead_letters"].values()}
    assert reasons["Unredacted"]["reason"].startswith("unredacted steps [1] refused")
    assert reasons["Unredacted"]["original_withheld"] is True
    assert reasons["KeyMismatch"]["reason"] == "record key 'other' is not its trajectory_id 't-ok'"


def test_credentials_in_headers_are_scrubbed_through_the_model() -> None:
    t = make_trajectory("t-h", n_steps=2)
    t.steps[0].metadata.request_headers.update({"Authorization": "Bearer sk-x", "user-agent": "a/1"})
    b = PendingBatch(TOPICS, sensitive_headers=("authorization",))
    b.add_all([SourceRecord("a", 0, 0, "t-h", encode(t))], NOW)
    (first, _) = sorted(b.tables["steps"].values(), key=lambda r: r["step_index"])
    assert "sk-x" not in first["record"] and '"user-agent":"a/1"' in first["record"]


def test_nulls_the_model_accepts_are_stored_as_received() -> None:
    t = make_trajectory("t-n", n_steps=1)
    wire = encode(t)
    null_extra = wire.replace(b'"role":"system",', b'"role":"system","note":null,', 1)  # Message takes extras
    null_field = wire.replace(b'"status":"ended"', b'"session_id":null,"status":"ended"', 1)
    for value in (null_extra, null_field):
        got = receive_trajectory(value)
        assert got is not None
        assert [decode(s.encode()) for s in got.step_json] == decode(value).steps  # read back the same
        assert got.step_json[0].encode() in value and got.trajectory.session_id is None
    # StepMetadata takes no extra fields: the mirror refuses this record, as the model does
    extra_in_closed = wire.replace(b'"request_headers":{}', b'"request_headers":{},"tool_versions_x":1', 1)
    assert receive_trajectory(extra_in_closed) is None
    b = PendingBatch(TOPICS)
    b.add(SourceRecord("a", 0, 0, "t-n", extra_in_closed), NOW)
    (row,) = b.tables["dead_letters"].values()
    assert row["error_type"] == "ValidationError" and "tool_versions_x" in row["reason"]


def test_a_step_spelled_otherwise_is_stored_as_received() -> None:
    t = make_trajectory("t-sp", n_steps=3)
    wire = encode(t)
    assert wire.count(b'"latency_ms":12.5') == 3
    other = wire.replace(b'"latency_ms":12.5', b'"latency_ms":1.25e1')  # the same number, spelled otherwise
    got = receive_trajectory(other)
    assert got is not None and all(s.encode() in other for s in got.step_json)
    assert all('"latency_ms":1.25e1' in s for s in got.step_json)
    assert [decode(s.encode()) for s in got.step_json] == t.steps  # the model reads what is stored the same
    assert got.header_json == encode(t.model_copy(update={"steps": []})).decode().replace('"steps":[],', "")
    fast = rows_of(got.trajectory, got.steps, got.header_json, got.step_json, REC, NOW)
    model = trajectory_rows(t, REC, NOW)
    assert _without_json(fast) == _without_json(model)


def _without_json(tables: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """Rows less the columns that hold or hash a record's JSON text."""
    return {
        t: [{k: v for k, v in r.items() if k not in ("record", "content_hash")} for r in rows]
        for t, rows in tables.items()
    }


def test_only_the_top_level_steps_array_is_cut_out() -> None:
    t = make_trajectory("t-nest", n_steps=2)
    t.steps[1].observation.messages.append(Message(role="user", content="hi", steps=[1, 2]))
    nested = encode(t)  # a "steps" key inside a step (Message takes extra fields)
    got = receive_trajectory(nested)
    assert got is not None
    assert got.step_json == [s.model_dump_json(exclude_none=True) for s in t.steps]
    # a second top-level "steps" key: which array the validator read is not certain, so the model decides
    at = nested.rindex(b'"rewards":')  # the trajectory's own rewards, after its steps
    doubled = nested[:at] + b'"steps":[],' + nested[at:]
    assert receive_trajectory(doubled) is None
    b = PendingBatch(TOPICS)
    b.add(SourceRecord("a", 0, 0, "t-nest", doubled), NOW)
    (version,) = b.tables["trajectory_versions"].values()
    assert version["step_count"] == len(decode(doubled).steps) == len(b.tables["steps"])


def _step_records(t: Trajectory) -> list[tuple[str, bytes]]:
    """``t``'s step records as the join sends them (layout 2.0), keyed ``step_record_key``."""
    return [
        (step_record_key(t.trajectory_id, e), v)
        for e, v in on_topic(t, {}, step_payloads(t, {})).step_records
    ]


def test_step_records_take_the_fast_path_with_the_model_rows() -> None:
    for t in _varied():
        for key, value in _step_records(t):
            got = receive_step_record(value)
            assert got is not None, key
            model = decode(value)
            assert isinstance(model, TrajectoryStep)
            assert got.step_json.encode() == step_bytes_of(value)
            fast = step_record_rows(got.record, got.step, got.step_json, NOW)
            assert fast == step_record_rows(model, model.step, got.step_json, NOW), key


def test_step_records_the_mirror_refuses_go_through_the_model_and_store_the_same() -> None:
    t = _varied()[3]
    (key, wire), *_ = _step_records(t)
    spaced = json.dumps(json.loads(wire), indent=1).encode()  # valid, the step no longer cut out as is
    moved = json.dumps(
        {"step": json.loads(wire)["step"], **{k: v for k, v in json.loads(wire).items() if k != "step"}}
    )
    assert receive_step_record(spaced) is None and receive_step_record(moved.encode()) is None
    a, b = PendingBatch(TOPICS), PendingBatch(TOPICS)
    a.add(SourceRecord("a", 0, 0, key, wire), NOW)
    b.add(SourceRecord("a", 0, 0, key, spaced), NOW)
    assert a.tables["steps"].keys() == b.tables["steps"].keys() and not a.tables["dead_letters"]
    strip = lambda rows: [{k: v for k, v in r.items() if k != "record"} for r in rows.values()]  # noqa: E731
    assert strip(a.tables["steps"]) == strip(b.tables["steps"])


def test_a_step_record_read_from_elsewhere_than_its_last_field_is_not_cut_out() -> None:
    """The step the mirror reads must be the bytes right after the last ``,"step":`` and before the
    closing brace: a record whose ``step`` key comes twice (the decoder keeps one, the cut could take the
    other) or whose last field is not its step takes the model's path."""
    (key, wire), (_, other) = _step_records(_varied()[3])[:2]
    body, other_body = step_bytes_of(wire), step_bytes_of(other)
    assert body is not None and other_body is not None and body != other_body
    head = wire[: -len(body) - 9]  # the record's own fields, before ``,"step":``
    twice = head + b',"step":' + other_body + b',"step":' + body + b"}"
    trailing = wire[:-1] + b',"digest":"x"}'
    got = receive_step_record(twice)
    assert got is None or got.step_json.encode() == body
    assert receive_step_record(trailing) is None
    assert receive_step_record(wire) is not None


def test_step_records_refused_on_the_fast_path_name_the_fault() -> None:
    raw = make_trajectory("t-raw2", n_steps=1)
    raw.steps[0].governance.redaction = "raw"
    ((key, value),) = _step_records(raw)
    ok_key, ok_value = _step_records(make_trajectory("t-ok2", n_steps=1))[0]
    assert receive_step_record(value) is not None and receive_step_record(ok_value) is not None
    b = PendingBatch(TOPICS)
    b.add(SourceRecord("a", 0, 0, key, value), NOW)
    b.add(SourceRecord("a", 0, 1, ok_key.replace("t-ok2", "t-other"), ok_value), NOW)
    reasons = {r["error_type"]: r for r in b.tables["dead_letters"].values()}
    assert reasons["Unredacted"]["reason"].startswith("unredacted steps [0] refused")
    assert reasons["KeyMismatch"]["reason"].endswith("is not the step record key of its trajectory and step")
    assert not b.tables["steps"]
