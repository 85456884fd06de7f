"""Tenant scoping and read-only checks on a real DuckDB file."""

from __future__ import annotations

from pathlib import Path

import pytest

from sinks.batch import BatchTopics, PendingBatch
from sinks.exceptions import QueryError, QueryRejected
from sinks.flatten import SourceRecord
from sinks.principal import OPERATOR, Principal
from sinks.scoped_query import run_query
from sinks.store import DuckDBStore, connect
from sluice.events import encode
from testing.samples import make_trajectory

ACME = Principal("acme")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("guard") / "s.duckdb"
    store = DuckDBStore(path)
    b = PendingBatch(BatchTopics("a", "d"))
    for i, tenant in enumerate(["acme", "acme", "globex", "o'brien"]):
        t = make_trajectory(f"t{i}", tenant=tenant, n_steps=2, reward=1.0)
        b.add(SourceRecord("a", 0, i, t.trajectory_id, encode(t)))
    b.add(SourceRecord("a", 0, 9, "x", b"garbage"))
    store.write(b, "g")
    store.close()
    return path


def _rows(db: Path, sql: str, who: Principal) -> list[dict]:
    con = connect(db, read_only=True)
    try:
        return run_query(con.cursor(), sql, who).read_all().to_pylist()
    finally:
        con.close()


def test_tenant_sees_only_its_rows(db: Path) -> None:
    assert _rows(db, "SELECT DISTINCT tenant FROM trajectories", ACME) == [{"tenant": "acme"}]
    assert _rows(db, "SELECT count(*) AS n FROM steps", ACME) == [{"n": 4}]
    assert _rows(db, "SELECT count(*) AS n FROM steps", OPERATOR) == [{"n": 8}]
    joined = "SELECT count(*) AS n FROM steps s JOIN trajectories t USING (trajectory_id)"
    assert _rows(db, joined, ACME) == [{"n": 4}]
    assert _rows(db, "WITH x AS (SELECT * FROM training_set) SELECT count(*) AS n FROM x", ACME) == [{"n": 2}]
    assert _rows(db, "SELECT count(*) AS n FROM trajectories", Principal("o'brien")) == [{"n": 1}]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM store.steps",
        "SELECT * FROM main.trajectories",
        "SELECT * FROM dead_letters",
        "SELECT * FROM erasures",
        "WITH dead_letters AS (SELECT * FROM dead_letters) SELECT * FROM dead_letters",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM '/etc/passwd'",
        "SELECT * FROM query_table('dead_letters')",
        "SELECT * FROM duckdb_tables()",
        "SELECT * FROM information_schema.tables",
        "SELECT * FROM sqlite_master",
        "DESCRIBE steps",
        "SELECT (SELECT count(*) FROM store.trajectory_versions) AS n",
    ],
)
def test_tenant_cannot_reach_past_its_views(db: Path, sql: str) -> None:
    with pytest.raises(QueryRejected):
        _rows(db, sql, ACME)


@pytest.mark.parametrize(
    "sql",
    ["DELETE FROM trajectories", "CREATE TABLE x AS SELECT 1", "SELECT 1; SELECT 2", "COPY steps TO 'x.csv'"],
)
def test_only_read_only_statements(db: Path, sql: str) -> None:
    with pytest.raises(QueryRejected):
        _rows(db, sql, OPERATOR)


def test_operator_reaches_everything_but_files(db: Path) -> None:
    assert _rows(db, "SELECT count(*) AS n FROM dead_letters", OPERATOR) == [{"n": 1}]
    assert _rows(db, "SELECT count(*) AS n FROM store.steps", OPERATOR) == [{"n": 8}]
    assert _rows(db, "SELECT count(*) AS n FROM lineage", OPERATOR) == [{"n": 5}]
    with pytest.raises(QueryError, match="disabled"):
        _rows(db, "SELECT * FROM read_csv('/etc/hostname')", OPERATOR)


def test_bad_sql_gets_duckdbs_message(db: Path) -> None:
    with pytest.raises(QueryError, match="syntax error"):
        _rows(db, "SELEC 1", ACME)
    with pytest.raises(QueryError, match="nope"):
        _rows(db, "SELECT nope FROM trajectories", ACME)
