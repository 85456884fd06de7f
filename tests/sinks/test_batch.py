"""A batch de-duplicates by identity, orders tombstones, and dead-letters bad records."""

from __future__ import annotations

from sinks.batch import BatchTopics, PendingBatch
from sinks.flatten import SourceRecord
from sluice.events import DeadLetter, Reward, RewardEvent, encode
from testing.samples import make_trajectory

TOPICS = BatchTopics(audited="a", deadletter="d", raw=frozenset({"raw"}))


def _rec(
    offset: int, key: str | None, value: bytes | None, topic: str = "a", partition: int = 0
) -> SourceRecord:
    return SourceRecord(topic, partition, offset, key, value)


def test_repeats_upsert_and_offsets_advance() -> None:
    b = PendingBatch(TOPICS)
    v1 = encode(make_trajectory("t1", n_steps=2))
    v2 = encode(make_trajectory("t1", n_steps=2, version=2, reward=1.0))
    for i, value in enumerate([v1, v1, v2]):
        b.add(_rec(i, "t1", value))
    assert len(b.tables["trajectory_versions"]) == 2  # v1 once, v2 once
    assert len(b.tables["steps"]) == 2  # same content in both versions: one row per step
    assert all(r["since_version"] == 1 for r in b.tables["steps"].values())
    assert b.offsets == {("a", 0): 3} and b.counts.trajectories == 3


def test_tombstone_drops_earlier_rows_and_keeps_later_versions() -> None:
    b = PendingBatch(TOPICS)
    b.add(_rec(0, "t1", encode(make_trajectory("t1"))))
    b.add(_rec(1, "t2", encode(make_trajectory("t2"))))
    b.add(_rec(2, "t1", None))
    assert b.deletes == {"t1"} and b.trajectory_ids() == {"t2"}
    b.add(_rec(3, "t1", encode(make_trajectory("t1", version=2))))
    assert b.trajectory_ids() == {"t1", "t2"}
    versions = b.tables["trajectory_versions"].values()
    assert {(r["trajectory_id"], r["record_offset"]) for r in versions} == {("t2", 1), ("t1", 3)}
    ignoring = PendingBatch(TOPICS, apply_tombstones=False)
    ignoring.add(_rec(0, "t1", None))
    assert not ignoring.deletes and ignoring.counts.tombstones == 1


def test_bad_records_become_dead_letters_with_reasons() -> None:
    b = PendingBatch(TOPICS)
    raw = make_trajectory("t3")
    raw.steps[0].governance.redaction = "raw"
    raw.governance.redaction = "raw"
    reward = RewardEvent(trajectory_id="t4", tenant="acme", reward=Reward(value=1.0))
    b.add(_rec(0, "x", b"{not json"))
    b.add(_rec(1, "t4", encode(reward)))
    b.add(_rec(2, "other", encode(make_trajectory("t5"))))
    b.add(_rec(3, "t3", encode(raw)))
    b.add(
        _rec(
            0,
            "t6",
            encode(DeadLetter(stage="redact", reason="spaCy failed", source_topic="raw", key="t6")),
            "d",
        )
    )
    rows = {r["source_offset"]: r for r in b.tables["dead_letters"].values() if r["stage"] == "sink"}
    assert rows[0]["reason"].startswith("invalid record:") and rows[0]["error_type"] == "ValidationError"
    assert "got a reward event" in rows[1]["reason"]
    assert rows[2]["error_type"] == "KeyMismatch"
    assert rows[3]["error_type"] == "Unredacted" and rows[3]["original_b64"] is None
    staged = [r for r in b.tables["dead_letters"].values() if r["stage"] == "redact"]
    assert staged[0]["original_withheld"] and staged[0]["reason"] == "spaCy failed"
    assert b.counts.invalid == 4 and b.counts.dead_letters == 1 and not b.tables["trajectory_versions"]
    positions = {(r["record_topic"], r["record_offset"]) for r in b.tables["dead_letters"].values()}
    assert positions == {("a", 0), ("a", 1), ("a", 2), ("a", 3), ("d", 0)}  # lineage of each


def test_validation_reason_leaves_values_out() -> None:
    b = PendingBatch(TOPICS)
    bad = encode(make_trajectory("t1")).replace(b'"tenant":"acme"', b'"tenant":123456789')
    b.add(_rec(0, "t1", bad))
    (row,) = b.tables["dead_letters"].values()
    assert "tenant" in row["reason"] and "123456789" not in row["reason"]
