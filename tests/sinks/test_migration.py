"""A store written at schema version 1 (``data/store_v1``: a v1 sink's export) opens migrated."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from sinks.arrow_tables import columns
from sinks.batch import BatchTopics, PendingBatch
from sinks.exceptions import SinkError
from sinks.flatten import SourceRecord
from sinks.schema import STORE_SCHEMA_VERSION, TABLES
from sinks.store import DuckDBStore, stored_schema_version
from sluice.events import encode
from testing.samples import make_trajectory

V1 = Path(__file__).parent / "data" / "store_v1"


def _v1_store(path: Path) -> Path:
    """Import the export into a new file, as the v1 sink left it."""
    con = duckdb.connect(str(path))
    con.execute((V1 / "schema.sql").read_text())
    con.execute((V1 / "load.sql").read_text().replace("{dir}", str(V1)))
    assert stored_schema_version(con) == "1"
    con.close()
    return path


def _rows(store: DuckDBStore, sql: str) -> list[tuple]:
    return store.con.execute(sql).fetchall()


def test_v1_store_migrates_in_place(tmp_path: Path) -> None:
    store = DuckDBStore(_v1_store(tmp_path / "v1.duckdb"))
    try:
        assert stored_schema_version(store.con) == STORE_SCHEMA_VERSION
        for table in TABLES:
            described = [r[0] for r in _rows(store, f"DESCRIBE store.{table}")]
            assert sorted(described) == sorted(columns(table)), table
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


def test_a_store_from_a_newer_sluice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    store = DuckDBStore(path)
    store.con.execute("UPDATE store.meta SET value = '99' WHERE key = 'store_schema_version'").fetchall()
    store.close()
    with pytest.raises(SinkError, match="newer than this Sluice"):
        DuckDBStore(path)
