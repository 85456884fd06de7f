"""Stores written at older schema versions (``data/store_v1``, ``data/store_v3``: exports of sinks of
those versions) open migrated."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from sinks.arrow_tables import columns
from sinks.batch import BatchTopics, PendingBatch
from sinks.exceptions import SinkError
from sinks.flatten import SourceRecord
from sinks.schema import COMPUTED_COLUMNS, STORE_SCHEMA_VERSION, TABLES
from sinks.store import DuckDBStore, stored_schema_version
from sluice.events import encode
from testing.samples import make_trajectory

DATA = Path(__file__).parent / "data"
V1 = DATA / "store_v1"
V3 = DATA / "store_v3"


def _import(export: Path, path: Path, version: str) -> Path:
    """Import an export into a new file, as the sink of that schema version left it."""
    con = duckdb.connect(str(path))
    con.execute((export / "schema.sql").read_text())
    con.execute((export / "load.sql").read_text().replace("{dir}", str(export)))
    assert stored_schema_version(con) == version
    con.close()
    return path


def _v1_store(path: Path) -> Path:
    return _import(V1, path, "1")


def _rows(store: DuckDBStore, sql: str) -> list[tuple]:
    return store.con.execute(sql).fetchall()


def test_v1_store_migrates_in_place(tmp_path: Path) -> None:
    store = DuckDBStore(_v1_store(tmp_path / "v1.duckdb"))
    try:
        assert stored_schema_version(store.con) == STORE_SCHEMA_VERSION
        for table in TABLES:
            described = [r[0] for r in _rows(store, f"DESCRIBE store.{table}")]
            assert sorted(described) == sorted([*columns(table), *COMPUTED_COLUMNS.get(table, {})]), table
        # lineage moved onto its rows: the same positions as the v1 lineage table held
        assert _rows(
            store, 'SELECT record_id, kind, topic, "partition", "offset" FROM lineage ORDER BY 3, 4, 5'
        ) == [
            ("5b8775874eb649edb1462aab9897a700", "dead_letter", "p.deadletter", 0, 0),
            ("t2:v1", "trajectory", "p.trajectories.audited", 0, 3),
            ("sink:p.trajectories.audited:0:4", "invalid", "p.trajectories.audited", 0, 4),
            ("t1:v1", "trajectory", "p.trajectories.audited", 1, 7),
        ]
        # dropped step columns are read from the records: the values v1 stored
        t1 = make_trajectory("t1", n_steps=2, reward=1.0)
        got = _rows(
            store,
            "SELECT step_id, prompt_token_ids, completion_token_ids, completion_logprobs, operation, "
            "prefix_message_count, stream FROM steps WHERE trajectory_id = 't1' ORDER BY step_index",
        )
        assert got == [
            (
                s.event_id,
                s.action.prompt_token_ids,
                s.action.choices[0].token_ids,
                s.action.choices[0].logprobs,
                "chat",
                s.observation.prefix_message_count,
                False,
            )
            for s in t1.steps
        ]
        assert _rows(store, "SELECT DISTINCT entity_types FROM redaction_reports") == [(["PERSON"],)]
        assert _rows(store, "SELECT trajectory_id, decision FROM eligibility_decisions ORDER BY 1") == [
            ("t1", "train"),
            ("t2", "train"),
        ]
        # the train decision of the view's rule, at the grade the v1 sink recorded (approximate)
        assert _rows(store, "SELECT trajectory_id, train_blockers FROM trajectories ORDER BY 1") == [
            ("t1", []),
            ("t2", ["unrewarded"]),
        ]
        assert _rows(store, "SELECT trajectory_id FROM training_set") == [("t1",)]
        assert store.stored_offsets("sluice-sink") == {
            ("p.trajectories.audited", 0): 5,
            ("p.trajectories.audited", 1): 8,
            ("p.deadletter", 0): 1,
        }
        # new batches land beside the migrated rows
        b = PendingBatch(BatchTopics("p.trajectories.audited", "p.deadletter"))
        b.add(SourceRecord("p.trajectories.audited", 0, 5, "t5", encode(make_trajectory("t5"))))
        store.write(b, "sluice-sink")
        assert _rows(store, "SELECT count(*) FROM trajectories") == [(3,)]
    finally:
        store.close()
    DuckDBStore(tmp_path / "v1.duckdb").close()  # reopening a migrated store changes nothing


def test_v3_store_gets_the_train_decision_its_training_set_applied(tmp_path: Path) -> None:
    """The v3 sink applied the train rule in its training_set view, with the grade it recorded in
    store.meta (deterministic here); the migration stores that rule's decision once per version, so the
    training set stays what it was, and the view filters on the stored decision from then on."""
    path = _import(V3, tmp_path / "v3.duckdb", "3")
    con = duckdb.connect(str(path))
    training_set = "SELECT trajectory_id, version FROM training_set ORDER BY 1"
    before = con.execute(training_set).fetchall()
    con.close()
    assert before == [("late", 2), ("ok", 1)]
    store = DuckDBStore(path)
    try:
        assert stored_schema_version(store.con) == STORE_SCHEMA_VERSION
        assert _rows(store, "SELECT event_id, train_blockers FROM store.trajectory_versions ORDER BY 1") == [
            ("approx:v1", ["replay_grade:approximate<deterministic"]),
            ("audit:v1", ["eligibility:audit_only"]),
            ("late:v1", ["unrewarded"]),
            ("late:v2", []),
            ("none:v1", ["unrewarded"]),
            ("ok:v1", []),
        ]
        assert _rows(store, training_set) == before
        assert _rows(store, "SELECT count(*) FROM store.meta WHERE key = 'min_train_grade'") == [(0,)]
        # from now on the stage's decision decides, whatever the grade once recorded
        b = PendingBatch(BatchTopics("p.trajectories.audited", "p.deadletter"))
        approx = make_trajectory("approx", n_steps=1, version=2, reward=0.5, grade="approximate")
        assert approx.train_blockers == []
        b.add(SourceRecord("p.trajectories.audited", 1, 9, "approx", encode(approx)))
        store.write(b, "sluice-sink")
        assert _rows(store, training_set) == [("approx", 2), ("late", 2), ("ok", 1)]
    finally:
        store.close()
    DuckDBStore(path).close()  # reopening a migrated store changes nothing


def test_a_store_from_a_newer_sluice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    store = DuckDBStore(path)
    store.con.execute("UPDATE store.meta SET value = '99' WHERE key = 'store_schema_version'").fetchall()
    store.close()
    with pytest.raises(SinkError, match="newer than this Sluice"):
        DuckDBStore(path)
