"""The DuckDB store on a real file: atomic rows+offsets, idempotent upserts, views, deletes."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sinks.batch import BatchTopics, PendingBatch
from sinks.config import SinkConfig
from sinks.exceptions import SinkError
from sinks.faults import CrashPlan
from sinks.flatten import SourceRecord
from sinks.store import DuckDBStore, connect
from sluice.events import Trajectory, encode
from testing.samples import make_trajectory

TOPICS = BatchTopics(audited="a", deadletter="d")


def _batch(trajs: list[Trajectory], start: int = 0) -> PendingBatch:
    b = PendingBatch(TOPICS)
    for i, t in enumerate(trajs):
        b.add(SourceRecord("a", i % 2, start + i, t.trajectory_id, encode(t)))
    return b


def _one(store: DuckDBStore, sql: str) -> object:
    return store.con.execute(sql).fetchone()[0]


@pytest.fixture
def store(tmp_path: Path) -> DuckDBStore:
    s = DuckDBStore(tmp_path / "s.duckdb")
    yield s
    s.close()


def test_write_is_idempotent_and_stores_offsets(store: DuckDBStore) -> None:
    trajs = [make_trajectory(f"t{i}", n_steps=3, reward=1.0) for i in range(10)]
    written = store.write(_batch(trajs), "g")
    assert written["trajectory_versions"] == 10 and written["steps"] == 30
    again = store.write(_batch(trajs), "g")
    assert again["trajectory_versions"] == 0 and again["steps"] == 0
    assert _one(store, "SELECT count(*) FROM trajectories") == 10
    assert _one(store, "SELECT count(*) FROM steps") == 30
    assert store.stored_offsets("g") == {("a", 0): 9, ("a", 1): 10}
    assert store.stored_offsets("other") == {}


def test_failure_inside_the_transaction_writes_nothing(store: DuckDBStore) -> None:
    class Boom(Exception):
        pass

    class RaiseAt(CrashPlan):
        def reached(self, point: str) -> None:
            if point == "before_commit":
                raise Boom

    store.crash = RaiseAt(None)
    with pytest.raises(Boom):
        store.write(_batch([make_trajectory("t1")]), "g")
    assert _one(store, "SELECT count(*) FROM store.trajectory_versions") == 0
    assert store.stored_offsets("g") == {}


def test_late_reward_version_updates_the_latest_view(store: DuckDBStore) -> None:
    store.write(_batch([make_trajectory("t1", n_steps=2, decision="train")]), "g")
    assert _one(store, "SELECT count(*) FROM training_set") == 0  # not rewarded yet
    store.write(_batch([make_trajectory("t1", n_steps=2, version=2, reward=0.75)], start=1), "g")
    row = store.con.execute("SELECT version, reward, rewarded, versions FROM trajectories").fetchall()
    assert row == [(2, 0.75, True, 2)]
    assert _one(store, "SELECT count(*) FROM trajectory_versions") == 2
    assert _one(store, "SELECT count(*) FROM steps") == 2
    assert _one(store, "SELECT count(*) FROM training_set") == 1


def test_a_newer_version_replaces_a_step_only_when_its_content_changed(store: DuckDBStore) -> None:
    """DuckDB computes each step's digest as it inserts; the upsert compares digests, batches and the
    store alike."""
    first = make_trajectory("t1", n_steps=2, reward=1.0)
    store.write(_batch([first]), "g")
    rows = store.con.execute("SELECT content_hash, record FROM store.steps ORDER BY step_index").fetchall()
    assert [h for h, _ in rows] == [hashlib.sha1(r.encode()).hexdigest() for _, r in rows]
    same = make_trajectory("t1", n_steps=2, reward=0.5, version=2)
    changed = same.model_copy(deep=True)
    changed.steps[1].metadata.model_version = "v-new"
    store.write(_batch([same], start=1), "g")
    assert _one(store, "SELECT max(since_version) FROM store.steps") == 1  # unchanged: kept as stored
    store.write(_batch([changed.model_copy(update={"version": 3})], start=2), "g")
    versions = store.con.execute(
        "SELECT step_index, since_version, model_version FROM store.steps ORDER BY 1"
    )
    assert versions.fetchall() == [(0, 1, first.steps[0].metadata.model_version), (1, 3, "v-new")]
    in_one = _batch([first, changed.model_copy(update={"version": 3})])  # both versions in one batch
    assert [r["since_version"] for r in in_one.tables["steps"].values()] == [1, 3]


def test_training_set_applies_the_train_rule(store: DuckDBStore) -> None:
    trajs = [
        make_trajectory("ok", reward=1.0),
        make_trajectory("audit", reward=1.0, decision="audit_only"),
        make_trajectory("unrewarded"),
        make_trajectory("nonreplay", reward=1.0, grade="non_replayable"),
        make_trajectory("approx", reward=0.0, grade="approximate"),
    ]
    store.write(_batch(trajs), "g")
    ids = {r[0] for r in store.con.execute("SELECT trajectory_id FROM training_set").fetchall()}
    assert ids == {"ok", "approx"}


def test_training_set_is_the_stages_carried_decision(store: DuckDBStore) -> None:
    """The view filters on the decision the join stage carried, and takes no rule of its own: a
    version the stage blocked for a reason eligibility, reward and grade do not show stays out, and
    one without a decision (undecided) is not trained on."""
    stricter = "replay_grade:approximate<deterministic"  # a stage that asks for a better grade
    trajs = [
        make_trajectory("ok", reward=1.0),
        make_trajectory("strict", reward=1.0, grade="approximate", train_blockers=[stricter]),
        make_trajectory("held", reward=1.0, train_blockers=["held:overlay canary"]),
        make_trajectory("undecided", reward=1.0).model_copy(update={"train_blockers": None}),
        make_trajectory("audit", reward=1.0, decision="audit_only"),
    ]
    store.write(_batch(trajs), "g")
    rows = store.con.execute("SELECT trajectory_id, train_blockers FROM trajectories ORDER BY 1").fetchall()
    assert rows == [
        ("audit", ["eligibility:audit_only"]),
        ("held", ["held:overlay canary"]),
        ("ok", []),
        ("strict", [stricter]),
        ("undecided", None),
    ]
    ids = {r[0] for r in store.con.execute("SELECT trajectory_id FROM training_set").fetchall()}
    assert ids == {"ok"}
    decisions = store.con.execute(
        "SELECT trajectory_id, train_blockers FROM eligibility_decisions WHERE trajectory_id = 'strict'"
    ).fetchall()
    assert decisions == [("strict", [stricter])]


def test_erased_trajectories_stay_erased(store: DuckDBStore) -> None:
    store.write(_batch([make_trajectory("t1"), make_trajectory("t2")]), "g")
    store.con.execute("INSERT INTO store.erased_trajectories VALUES ('t1', 'e1', now())").fetchall()
    b = _batch([make_trajectory("t1", version=2, reward=1.0)], start=5)
    b.add(SourceRecord("a", 0, 9, "t2", None))  # a tombstone deletes every row of t2
    store.write(b, "g")
    assert store.con.execute("SELECT trajectory_id, version FROM trajectories").fetchall() == [("t1", 1)]
    assert _one(store, "SELECT count(*) FROM lineage WHERE trajectory_id = 't2'") == 0


def test_reopen_keeps_rows_and_offsets(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    s = DuckDBStore(path)
    s.write(_batch([make_trajectory("t1")]), "g")
    s.close()
    s = DuckDBStore(path)
    assert _one(s, "SELECT count(*) FROM trajectories") == 1
    assert s.stored_offsets("g") == {("a", 0): 1}
    s.close()


def test_a_record_that_does_not_fit_becomes_a_dead_letter(store: DuckDBStore) -> None:
    too_big = make_trajectory("big", n_steps=1)
    too_big.steps[0].action_result.status_code = 2**40  # beyond INTEGER
    written = store.write(_batch([make_trajectory("ok"), too_big, make_trajectory("ok2")]), "g")
    assert written["trajectory_versions"] == 2 and written["dead_letters"] == 1
    reason = _one(store, "SELECT reason FROM dead_letters WHERE trajectory_id = 'big'")
    assert reason.startswith("does not fit the store schema")
    assert store.stored_offsets("g") == {("a", 0): 3, ("a", 1): 2}


def test_the_sink_writes_row_groups_of_its_configured_size(tmp_path: Path) -> None:
    store = DuckDBStore.for_sink(tmp_path / "s.duckdb", SinkConfig(row_group_size=2048))
    try:
        store.write(_batch([make_trajectory(f"t{i}", n_steps=10) for i in range(300)]), "g")  # 3,000 steps
        store.checkpoint()
        groups = _one(store, "SELECT count(DISTINCT row_group_id) FROM pragma_storage_info('store.steps')")
        assert groups == 2  # DuckDB's default would hold all 3,000 in one
        assert _one(store, "SELECT count(*) FROM steps") == 3000
    finally:
        store.close()
    reader = connect(tmp_path / "s.duckdb", read_only=True)  # readers open the file as usual
    assert reader.execute("SELECT count(*) FROM trajectories").fetchone()[0] == 300
    reader.close()


def test_offsets_of_another_broker_are_dropped(store: DuckDBStore) -> None:
    """Offsets belong to the broker they were read from: a restarted embedded broker (new cluster id,
    empty topics) must be read from the beginning, not from where the old one ended."""
    trajs = [make_trajectory(f"t{i}", n_steps=1) for i in range(4)]
    assert store.adopt_broker("sluice-aaa", "g") is False  # first broker: nothing stored to drop
    store.write(_batch(trajs), "g")
    store.write(_batch(trajs), "h")
    assert store.adopt_broker("sluice-aaa", "g") is False  # same broker: offsets kept
    assert store.stored_offsets("g") != {}
    assert store.adopt_broker("sluice-bbb", "g") is True
    assert store.stored_offsets("g") == {}
    assert store.stored_offsets("h") != {}  # another group's offsets are its own business
    assert _one(store, "SELECT count(*) FROM trajectories") == 4  # rows stay


def test_a_starting_sink_waits_for_a_readers_lock(tmp_path: Path) -> None:
    """A reader that opened the file while no sink served it (a query, a wait loop) holds the lock for a
    moment; a sink restarting then waits for it instead of failing its start, and still fails at once on a
    plain open without a wait."""
    path = tmp_path / "s.duckdb"
    DuckDBStore(path).con.close()
    reader = subprocess.Popen(
        [sys.executable, "-c",
         "import duckdb, sys, time\n"
         f"c = duckdb.connect({str(path)!r}, read_only=True)\n"
         "print('held', flush=True)\n"
         "time.sleep(1.5)\n"
         "c.close()\n"
         "sys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert reader.stdout is not None and reader.stdout.readline().strip() == "held"
        with pytest.raises(SinkError, match="lock"):
            connect(path)
        started = time.monotonic()
        store = DuckDBStore.for_sink(path, SinkConfig(database=str(path)))
        assert time.monotonic() - started >= 0.5
        assert _one(store, "SELECT count(*) FROM trajectories") == 0
        store.con.close()
    finally:
        reader.communicate("", timeout=10)
