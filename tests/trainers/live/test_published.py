"""A line's published versions: an erasure finds the first version that trained on an erased trajectory
however long the line (longer than the learner's weight copies), and the rebuild replays every later
version's rows minus the erased ones."""

from __future__ import annotations

from trainers.live.published import PublishedLine, coalesce
from trainers.live.samples import LiveRow, LiveSample
from trainers.live.scopes import MAX_SNAPSHOTS


def _row(tid: str) -> LiveRow:
    sample = LiveSample(
        trajectory_id=tid, version=1, step_index=0, prompt_ids=[1, 2], token_ids=[3], reward=1.0, policy_version=0,
        group_key="g", baseline_key="b",
    )  # fmt: skip
    return LiveRow(sample=sample, advantage=0.5)


def _line(n: int, max_rows: int = 1000) -> PublishedLine:
    line = PublishedLine(max_rows=max_rows)
    for v in range(1, n + 1):
        line.append(str(v), [_row(f"kept-{v}-a"), _row(f"kept-{v}-b")] + ([_row("gone")] if v == 2 else []))
    return line


def test_an_erasure_older_than_the_weight_copies_is_found_and_every_later_update_replayed() -> None:
    n = 3 * MAX_SNAPSHOTS
    line = _line(n)
    assert line.first_hit({"gone"}) == 1
    assert line.first_hit({"never-trained"}) is None
    keep = line.index_after("1")
    replay, lost, erased = line.replay_after(keep, {"gone"})
    assert len(replay) == n - 1 and lost == 0 and erased == 1
    assert all(len(rows) == 2 for rows in replay)
    assert not any(r.sample.trajectory_id == "gone" for rows in replay for r in rows)
    assert line.cut(keep) == [str(v) for v in range(2, n + 1)] and line.versions() == ["1"]


def test_going_back_to_the_start_replays_the_whole_line() -> None:
    line = _line(4)
    assert line.index_after("0") == 0
    replay, _, erased = line.replay_after(0, {"gone"})
    assert erased == 1
    assert [len(rows) for rows in replay] == [2, 2, 2, 2]


def test_old_rows_are_let_go_but_their_trajectory_ids_still_taint() -> None:
    line = _line(10, max_rows=8)  # 21 rows published; only the newest versions' rows are kept
    assert sum(len(e.rows) for e in line.entries) <= 8
    assert line.entries[1].rows == [] and line.first_hit({"gone"}) == 1
    replay, lost, erased = line.replay_after(1, {"gone"})
    assert erased == 0  # the erased row was in a version whose rows were let go
    assert lost == sum(e.rows_dropped for e in line.entries[1:]) > 0
    assert sum(map(len, replay)) == sum(len(e.rows) for e in line.entries[1:])


def test_a_rebuild_joins_updates_the_erasure_shrank_keeping_each_whole_and_in_order() -> None:
    rows = [[_row(f"t{b}-{i}") for i in range(n)] for b, n in enumerate([10, 2, 0, 3, 12, 1])]
    got = coalesce(rows, 8)
    assert [len(b) for b in got] == [10, 18]  # 2+0+3+12 reach 8 only with the 12; the last 1 joins them
    assert [r.sample.trajectory_id for b in got for r in b] == [
        r.sample.trajectory_id for b in rows for r in b
    ]
    assert coalesce([[], []], 8) == [] and [len(b) for b in coalesce([rows[1]], 8)] == [2]
