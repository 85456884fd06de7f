"""The evolution ledger and overlay outcomes in a real DuckDB file: once per entry, per arm, per tenant."""

from __future__ import annotations

from pathlib import Path

import pytest

from sinks.batch import BatchTopics, PendingBatch
from sinks.flatten import SourceRecord, ledger_row
from sinks.principal import OPERATOR, Principal
from sinks.schema import STORE_SCHEMA_VERSION
from sinks.scoped_query import run_query
from sinks.store import DuckDBStore, connect, stored_schema_version
from sluice.events import Trajectory, encode
from sluice.evolution import LedgerEntry
from testing.samples import make_trajectory

TOPICS = BatchTopics(audited="a", deadletter="d", ledger="l")


def entry(n: int, tenant: str = "acme", **kw: object) -> LedgerEntry:
    return LedgerEntry(
        entry_id=f"e{n}",
        proposal_id=f"pr-{n // 2}",
        kind="gate",
        surface="memory",
        tenant=tenant,
        task_id="refunds",
        gate="shadow",
        passed=n % 2 == 0,
        summary=f"entry {n}",
        evidence={"query": "SELECT 1", "numbers": {"before": 0.25, "after": 0.75}},
        diff={"memory": [f"fact {n}"]},
        overlay_id=f"ov-{n}",
        **kw,  # type: ignore[arg-type]
    )


def with_overlay(
    t: Trajectory, arms: list[tuple[str | None, str | None]], task: str | None = "refunds"
) -> Trajectory:
    """The trajectory with its steps' overlay (id, arm) and task as the proxy records them."""
    steps = [
        s.model_copy(
            update={
                "metadata": s.metadata.model_copy(
                    update={"overlay_id": ov, "overlay_arm": arm, "task_id": task}
                )
            }
        )
        for s, (ov, arm) in zip(t.steps, arms, strict=True)
    ]
    return t.model_copy(update={"steps": steps})


def write(store: DuckDBStore, records: list[SourceRecord]) -> dict[str, int]:
    b = PendingBatch(TOPICS)
    for r in records:
        b.add(r)
    return store.write(b, "g")


def ledger_records(entries: list[LedgerEntry], start: int = 0) -> list[SourceRecord]:
    return [
        SourceRecord("l", 0, start + i, e.proposal_id, e.model_dump_json().encode())
        for i, e in enumerate(entries)
    ]


def rows(path: Path, sql: str, who: Principal = OPERATOR) -> list[dict]:
    con = connect(path, read_only=True)
    try:
        return run_query(con.cursor(), sql, who).read_all().to_pylist()
    finally:
        con.close()


def test_ledger_builder_fills_every_column_in_order() -> None:
    from sinks.arrow_tables import columns

    row = ledger_row(entry(1), SourceRecord("l", 0, 5, "pr-0", b""), entry(1).created_at)
    assert list(row) == columns("evolution_ledger")
    assert set(LedgerEntry.model_fields) <= set(row)


def test_each_entry_lands_once_with_its_evidence_and_bad_records_are_dead_letters(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    store = DuckDBStore(path)
    entries = [entry(i) for i in range(4)]
    # a batch that repeats an entry, then a re-delivery of all of them (as after a crash), then garbage
    write(store, ledger_records([*entries, entries[1]]))
    write(store, ledger_records(entries, start=5))
    written = write(
        store, [SourceRecord("l", 1, 0, "pr-x", b'{"kind": "gate"}'), SourceRecord("l", 1, 1, "k", None)]
    )
    assert written.get("dead_letters") == 1
    store.close()
    got = rows(path, "SELECT * FROM evolution_ledger ORDER BY entry_id")
    assert [r["entry_id"] for r in got] == ["e0", "e1", "e2", "e3"]
    first = got[0]
    assert {
        k: first[k] for k in ("proposal_id", "kind", "surface", "tenant", "task_id", "gate", "passed")
    } == {
        "proposal_id": "pr-0",
        "kind": "gate",
        "surface": "memory",
        "tenant": "acme",
        "task_id": "refunds",
        "gate": "shadow",
        "passed": True,
    }
    assert first["record_topic"] == "l"
    (after,) = rows(
        path,
        "SELECT evidence.numbers.after::DOUBLE AS a, json_extract_string(diff, '$.memory[0]') AS m "
        "FROM evolution_ledger WHERE entry_id = 'e2'",
    )
    assert after == {"a": 0.75, "m": "fact 2"}
    (dl,) = rows(path, "SELECT trajectory_id, stage, reason FROM dead_letters")
    assert dl["trajectory_id"] is None and dl["stage"] == "sink" and "entry_id" not in dl["reason"]
    assert "proposal_id" in dl["reason"]


@pytest.fixture
def outcomes_db(tmp_path: Path) -> Path:
    path = tmp_path / "o.duckdb"
    store = DuckDBStore(path)
    trajs = [
        # control: bare agent (no overlay id); rewards 0 and 1 (latest versions), one never rewarded
        with_overlay(make_trajectory("c1", n_steps=2, reward=0.0), [(None, "control")] * 2),
        with_overlay(make_trajectory("c2", n_steps=2, version=1), [(None, "control")] * 2),
        with_overlay(make_trajectory("c2", n_steps=2, version=2, reward=1.0), [(None, "control")] * 2),
        with_overlay(make_trajectory("c3", n_steps=1), [(None, "control")]),
        # candidate: two rewarded at 1.0 and 0.5; the second began in the candidate arm, then was promoted
        with_overlay(make_trajectory("k1", n_steps=2, reward=1.0), [("ov-new", "candidate")] * 2),
        with_overlay(
            make_trajectory("k2", n_steps=2, reward=0.5), [("ov-new", "candidate"), ("ov-new", "control")]
        ),
        # no assignment covered it: not in the experiment
        make_trajectory("bare", n_steps=2, reward=1.0),
        # another tenant
        with_overlay(make_trajectory("g1", tenant="globex", n_steps=1, reward=1.0), [("ov-g", "candidate")]),
    ]
    records = [SourceRecord("a", 0, i, t.trajectory_id, encode(t)) for i, t in enumerate(trajs)]
    records += ledger_records([entry(0), entry(1, tenant="globex")], start=0)
    write(store, records)
    store.close()
    return path


def test_overlay_outcomes_per_arm_from_latest_versions(outcomes_db: Path) -> None:
    got = rows(
        outcomes_db,
        "SELECT tenant, task_id, overlay_id, overlay_arm, trajectories, rewarded, mean_reward, reward_sum "
        "FROM overlay_outcomes ORDER BY tenant, overlay_arm",
    )
    assert got == [
        {
            "tenant": "acme",
            "task_id": "refunds",
            "overlay_id": "ov-new",
            "overlay_arm": "candidate",
            "trajectories": 2,
            "rewarded": 2,
            "mean_reward": 0.75,
            "reward_sum": 1.5,
        },
        {
            "tenant": "acme",
            "task_id": "refunds",
            "overlay_id": None,
            "overlay_arm": "control",
            "trajectories": 3,
            "rewarded": 2,
            "mean_reward": 0.5,
            "reward_sum": 1.0,
        },
        {
            "tenant": "globex",
            "task_id": "refunds",
            "overlay_id": "ov-g",
            "overlay_arm": "candidate",
            "trajectories": 1,
            "rewarded": 1,
            "mean_reward": 1.0,
            "reward_sum": 1.0,
        },
    ]
    per_traj = rows(
        outcomes_db, "SELECT trajectory_id, overlay_arm, version FROM overlay_trajectories ORDER BY 1"
    )
    assert [(r["trajectory_id"], r["overlay_arm"], r["version"]) for r in per_traj] == [
        ("c1", "control", 1),
        ("c2", "control", 2),
        ("c3", "control", 1),
        ("g1", "candidate", 1),
        ("k1", "candidate", 1),
        ("k2", "candidate", 1),
    ]


def test_a_tenant_sees_only_its_own_ledger_and_outcomes(outcomes_db: Path) -> None:
    acme = Principal("acme")
    assert rows(outcomes_db, "SELECT DISTINCT tenant FROM overlay_outcomes", acme) == [{"tenant": "acme"}]
    assert rows(outcomes_db, "SELECT DISTINCT tenant FROM overlay_trajectories", acme) == [{"tenant": "acme"}]
    assert rows(outcomes_db, "SELECT entry_id, tenant FROM evolution_ledger", acme) == [
        {"entry_id": "e0", "tenant": "acme"}
    ]
    assert rows(outcomes_db, "SELECT count(*) AS n FROM evolution_ledger") == [{"n": 2}]


def test_a_version_2_store_gains_the_ledger(tmp_path: Path) -> None:
    path = tmp_path / "v2.duckdb"
    store = DuckDBStore(path)
    store.con.execute("DROP VIEW evolution_ledger").fetchall()
    store.con.execute("DROP VIEW overlay_outcomes").fetchall()
    store.con.execute("DROP VIEW overlay_trajectories").fetchall()
    store.con.execute("DROP TABLE store.evolution_ledger").fetchall()
    store.con.execute("ALTER TABLE store.trajectory_versions DROP COLUMN train_blockers").fetchall()  # v4
    store.con.execute("UPDATE store.meta SET value = '2' WHERE key = 'store_schema_version'").fetchall()
    store.close()
    store = DuckDBStore(path)
    try:
        assert stored_schema_version(store.con) == STORE_SCHEMA_VERSION == "4"
        write(store, ledger_records([entry(7)]))
        assert store.con.execute("SELECT entry_id FROM evolution_ledger").fetchall() == [("e7",)]
    finally:
        store.close()
