"""Flattening audited records into store rows: pure logic, no broker."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime

from sinks.arrow_tables import arrow_schema, to_arrow
from sinks.flatten import (
    SourceRecord,
    dead_letter_row,
    invalid_row,
    scrub_headers,
    trajectory_rows,
    unredacted_steps,
)
from sluice.events import DeadLetter
from testing.samples import make_trajectory

NOW = datetime(2026, 11, 2, tzinfo=UTC)


def test_rows_follow_table_schemas_in_order() -> None:
    """The Arrow fast path relies on rows built with the schema's column order."""
    t = make_trajectory("t1", n_steps=3, reward=0.5, subject_ids=["user-1"])
    rec = SourceRecord("topic", 0, 7, "t1", b"{}")
    dl = DeadLetter(stage="redact", reason="boom")
    tables = {
        **trajectory_rows(t, rec, NOW),
        "dead_letters": [dead_letter_row(dl, rec, False, NOW), invalid_row(rec, "bad", "X", NOW)],
    }
    for table, rows in tables.items():
        for row in rows:
            assert list(row) == arrow_schema(table).names, table
        assert to_arrow(table, rows).num_rows == len(rows)


def test_trajectory_header_aggregates_steps() -> None:
    t = make_trajectory("t1", tenant="globex", n_steps=4, version=2, reward=1.0, subject_ids=["s-9"])
    rows = trajectory_rows(t, SourceRecord("audited", 2, 41, "t1", b"{}"), NOW)
    (header,) = rows["trajectory_versions"]
    assert (header["record_topic"], header["record_partition"], header["record_offset"]) == ("audited", 2, 41)
    assert header["event_id"] == "t1:v2" and header["version"] == 2 and header["tenant"] == "globex"
    assert header["step_count"] == 4 and len(rows["steps"]) == 4
    assert header["output_tokens"] == sum(s["output_tokens"] for s in rows["steps"]) == 16
    assert header["models"] == ["sluice-tiny"] and header["model_versions"] == ["tiny-1"]
    assert header["eligibility"] == "train" and header["replay_grade"] == "deterministic"
    assert header["subject_ids"] == ["s-9"] and '"steps"' not in header["record"]
    assert header["train_blockers"] == []
    assert [r["reward_id"] for r in rows["rewards"]] == ["t1-r2"]
    step = rows["steps"][1]
    assert step["entities"] == '{"PERSON":1}' and step["entity_count"] == 1
    recorded = json.loads(step["record"])  # what the steps view reads the unstored fields from
    assert recorded["action"]["choices"][0]["token_ids"] and recorded["action"]["prompt_token_prefix_len"] > 0


def test_credentials_in_recorded_headers_are_scrubbed() -> None:
    t = make_trajectory("t1", n_steps=1)
    step = t.steps[0]
    step.metadata.request_headers.update({"Authorization": "Bearer sk-secret", "user-agent": "agent/1"})
    clean = scrub_headers(step, ["authorization", "x-api-key"])
    assert clean.metadata.request_headers == {"user-agent": "agent/1"}
    assert "sk-secret" not in clean.model_dump_json()


def test_unredacted_steps_are_detected() -> None:
    t = make_trajectory("t1", n_steps=2)
    assert unredacted_steps(t, t.steps) == []
    t.governance.redaction = "raw"
    t.steps[1].governance.redaction = "raw"
    assert unredacted_steps(t, t.steps) == [1]


def test_dead_letter_from_raw_topic_keeps_only_hash() -> None:
    original = b'{"content": "my SSN is 078-05-1120"}'
    dl = DeadLetter(
        stage="redact",
        reason="x",
        source_topic="p.steps.raw",
        original_b64=base64.b64encode(original).decode(),
    )
    rec = SourceRecord("p.deadletter", 0, 3, None, b"{}")
    row = dead_letter_row(dl, rec, True, NOW)
    assert row["original_b64"] is None and row["original_withheld"] is True
    assert row["original_bytes"] == len(original) and len(row["original_sha256"]) == 64
    assert dead_letter_row(dl, rec, False, NOW)["original_b64"] == dl.original_b64


def test_the_stages_train_decision_is_stored_as_it_came() -> None:
    rec = SourceRecord("audited", 0, 1, "t1", b"{}")
    blocked = make_trajectory("t1", reward=1.0, train_blockers=["replay_grade:approximate<deterministic"])
    (header,) = trajectory_rows(blocked, rec, NOW)["trajectory_versions"]
    assert header["train_blockers"] == ["replay_grade:approximate<deterministic"]
    undecided = blocked.model_copy(update={"train_blockers": None})  # written before stages carried it
    (header,) = trajectory_rows(undecided, rec, NOW)["trajectory_versions"]
    assert header["train_blockers"] is None
