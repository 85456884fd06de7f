"""The timer's due index and the join-state encoding it is rebuilt from."""

from __future__ import annotations

from governance.reward_join import JoinState
from pipeline.stages.due_index import DueIndex
from pipeline.stages.storage import decode_state, encode_state, peek_due, step_key


def test_pop_due_in_time_order_with_reschedules_and_removals() -> None:
    idx = DueIndex()
    idx.set(0, "a", 30.0)
    idx.set(1, "b", 10.0)
    idx.set(0, "c", 20.0)
    idx.set(0, "a", 5.0)  # re-scheduled earlier: the old heap entry is stale
    idx.set(1, "b", None)  # removed
    assert len(idx) == 2
    assert idx.pop_due(25.0) == [(0, "a"), (0, "c")]
    assert idx.pop_due(1e9) == []
    assert len(idx) == 0


def test_dropped_partition_never_ticks() -> None:
    idx = DueIndex()
    idx.set(0, "a", 1.0)
    idx.set(1, "b", 1.0)
    idx.drop_partition(1)
    assert idx.partitions == {0}
    assert idx.pop_due(2.0) == [(0, "a")]


def test_pop_limit() -> None:
    idx = DueIndex()
    for i in range(5):
        idx.set(0, f"t{i}", float(i))
    assert len(idx.pop_due(10.0, limit=3)) == 3
    assert len(idx.pop_due(10.0)) == 2


def test_state_encoding_round_trip_and_peek() -> None:
    state = JoinState.new("traj|with|bars", "acme", 12.5)
    value = encode_state(state, 3, 99.25)
    assert peek_due(value) == (3, 99.25)
    assert decode_state(value) == state
    assert peek_due(encode_state(state, 0, None)) == (0, None)
    assert step_key("t", "e") == b"t\x1fe"
