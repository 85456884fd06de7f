"""Versions by reference in the store: each step stored once, the same views as the inline layout, and
old-layout records still read (a rolling upgrade mixes both)."""

from __future__ import annotations

from pathlib import Path

import pytest

from governance.reward_join import on_topic, step_payloads
from sinks.batch import BatchTopics, PendingBatch
from sinks.erasure import step_record_keys
from sinks.flatten import SourceRecord
from sinks.store import DuckDBStore
from sluice.events import REFS_SCHEMA_VERSION, Trajectory, encode
from sluice.step_refs import step_record_key
from testing.samples import make_trajectory

TOPICS = BatchTopics(audited="a", deadletter="d")


def by_reference(versions: list[Trajectory]) -> list[tuple[str, bytes | None]]:
    """The (key, value) records the join writes for these versions on one topic."""
    stored = {s.event_id: (s, encode(s)) for v in versions for s in v.steps}
    sent: dict[str, str] = {}
    out: list[tuple[str, bytes | None]] = []
    for v in versions:
        emitted = on_topic(v, sent, step_payloads(v, stored))
        sent = emitted.sent
        tid = v.trajectory_id
        out += [(step_record_key(tid, e), body) for e, body in emitted.step_records]
        out.append((tid, encode(emitted.header)))
    return out


def write(store: DuckDBStore, records: list[tuple[str, bytes | None]]) -> PendingBatch:
    batch = PendingBatch(TOPICS)
    for offset, (key, value) in enumerate(records):
        batch.add(SourceRecord("a", 1, offset, key, value))
    store.write(batch, "g")
    return batch


def views(store: DuckDBStore) -> dict[str, list[tuple]]:
    q = {
        "trajectories": "SELECT * EXCLUDE (emitted_at) FROM trajectories ORDER BY trajectory_id",
        "steps": "SELECT * EXCLUDE (ingested_at) FROM steps ORDER BY trajectory_id, step_index",
        "rewards": "SELECT * EXCLUDE (ingested_at) FROM rewards ORDER BY reward_id",
        "versions": "SELECT trajectory_id, version, step_count, input_tokens, cost_usd, models "
        "FROM trajectory_versions ORDER BY 1, 2",
    }
    return {name: store.con.execute(sql).fetchall() for name, sql in q.items()}


@pytest.fixture
def stores(tmp_path: Path):
    inline, refs = DuckDBStore(tmp_path / "inline.duckdb"), DuckDBStore(tmp_path / "refs.duckdb")
    yield inline, refs
    inline.close()
    refs.close()


def test_both_layouts_give_the_same_views(stores) -> None:
    inline, refs = stores
    versions = [
        make_trajectory("acme~t1", n_steps=4),
        make_trajectory("acme~t1", n_steps=4, version=2, reward=1.0),
    ]
    versions[1] = versions[1].model_copy(update={"steps": versions[0].steps})  # history is immutable
    write(inline, [(v.trajectory_id, encode(v)) for v in versions])
    records = by_reference(versions)
    assert sum(1 for k, _ in records if "#" in k) == 4  # each step once; the late reward: a header only
    batch = write(refs, records)
    assert batch.counts.invalid == 0
    # two versions and four step records, each counted as what it is
    assert (batch.counts.trajectories, batch.counts.step_records) == (2, 4)
    assert views(refs) == views(inline)
    schema = refs.con.execute("SELECT list(schema_version ORDER BY version) FROM store.trajectory_versions")
    assert schema.fetchone()[0] == [REFS_SCHEMA_VERSION] * 2


def test_old_layout_records_read_beside_new_ones(stores) -> None:
    _, refs = stores
    old = make_trajectory("acme~old", n_steps=2, reward=0.5)
    new = make_trajectory("acme~new", n_steps=3, reward=1.0)
    write(refs, [("acme~old", encode(old)), *by_reference([new])])
    rows = refs.con.execute("SELECT trajectory_id, step_count FROM trajectories ORDER BY 1").fetchall()
    assert rows == [("acme~new", 3), ("acme~old", 2)]
    steps = refs.con.execute("SELECT count(*) FROM steps").fetchone()[0]
    assert steps == 5


def test_a_step_record_must_be_keyed_by_its_trajectory_and_step(stores) -> None:
    _, refs = stores
    key, value = by_reference([make_trajectory("acme~t2", n_steps=1)])[0]
    batch = PendingBatch(TOPICS)
    batch.add(SourceRecord("a", 0, 0, "acme~other#x", value))
    assert batch.counts.invalid == 1
    (row,) = batch.tables["dead_letters"].values()
    assert row["error_type"] == "KeyMismatch"


def test_erasure_finds_every_step_record_key_on_its_partition(stores) -> None:
    _, refs = stores
    t = make_trajectory("acme~t3", n_steps=3, reward=1.0)
    write(refs, by_reference([t]))
    keys = step_record_keys(refs.con, ["acme~t3"])
    assert sorted(keys) == sorted((step_record_key("acme~t3", s.event_id), 1) for s in t.steps)
    batch = PendingBatch(TOPICS)
    batch.add(SourceRecord("a", 1, 99, keys[0][0], None))  # a step key's tombstone deletes nothing itself
    assert not batch.deletes and batch.counts.tombstones == 1
