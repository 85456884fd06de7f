"""Batches written on the writer thread: in order, committed with their offsets, failures raised."""

from __future__ import annotations

from pathlib import Path

import pytest

from sinks.batch import BatchTopics, PendingBatch
from sinks.config import SinkConfig
from sinks.exceptions import SinkError
from sinks.flatten import SourceRecord
from sinks.store import DuckDBStore
from sinks.writer import BatchWriter
from sluice.events import encode
from testing.samples import make_trajectory

TOPICS = BatchTopics(audited="a", deadletter="d")


def _batch(ids: list[str], start: int) -> PendingBatch:
    b = PendingBatch(TOPICS)
    for i, tid in enumerate(ids):
        b.add(SourceRecord("a", 0, start + i, tid, encode(make_trajectory(tid, n_steps=2))))
    return b


@pytest.fixture
def store(tmp_path: Path) -> DuckDBStore:
    s = DuckDBStore.for_sink(tmp_path / "w.duckdb", SinkConfig())  # attached catalog, as the sink runs
    yield s
    s.close()


def test_batches_commit_in_order_with_their_offsets(store: DuckDBStore) -> None:
    writer = BatchWriter(store, "g")
    first, second = _batch(["t1", "t2"], 0), _batch(["t3"], 2)
    assert writer.submit(first) is None
    done = writer.submit(second)  # returns once the first is committed
    assert done is not None and done.batch is first and done.rows["steps"] == 4
    last = writer.finish()
    assert last is not None and last.batch is second and writer.finish() is None
    assert store.stored_offsets("g") == {("a", 0): 3}
    assert store.con.execute("SELECT count(*) FROM trajectories").fetchone()[0] == 3
    writer.close()


def test_a_failed_write_is_raised_and_commits_nothing(store: DuckDBStore) -> None:
    writer = BatchWriter(store, "g")
    writer.submit(_batch(["t1"], 0))
    writer.finish()
    store.con.execute("ALTER TABLE store.rewards RENAME TO rewards_gone").fetchall()
    b = _batch(["t2"], 1)
    b.add(SourceRecord("a", 0, 2, "t3", encode(make_trajectory("t3", reward=1.0))))
    writer.submit(b)
    with pytest.raises(SinkError, match="writing a batch"):
        writer.finish()
    writer.close()
    assert store.stored_offsets("g") == {("a", 0): 1}
    assert store.con.execute("SELECT count(*) FROM store.steps").fetchone()[0] == 2  # t1 only
