"""Which fetched records the stage transport fetches again (pure logic of the rebalance fix)."""

from __future__ import annotations

from dataclasses import dataclass

from faust.types import TP

from pipeline.stages.transport import first_unprocessed, undelivered, unprocessed_tail


@dataclass
class Rec:
    offset: int


def test_undelivered_names_the_first_skipped_offset_per_partition() -> None:
    a, b, c = TP("steps", 0), TP("steps", 1), TP("rewards", 0)
    records = {a: [Rec(5), Rec(6), Rec(7)], b: [Rec(0), Rec(1)], c: [Rec(3)]}
    # a: delivered up to 6 (the generation changed before 7); b: none delivered (paused); c: all delivered
    assert undelivered(records, {a: 6, c: 3}) == {a: 7, b: 0}
    assert undelivered(records, {a: 7, b: 1, c: 3}) == {}


def test_a_hole_at_the_committed_offset_blocks_the_commit() -> None:
    # committed 28 (record 28 is next), 29.. processed: 28 was lost by the client, read it again
    assert first_unprocessed([29, 30, 31], 28) == 28
    assert first_unprocessed([28, 29], 28) is None  # whole from the committed offset
    assert first_unprocessed([1, 2], None) == 0  # never committed: the partition starts at 0
    assert first_unprocessed([0, 1], None) is None
    assert first_unprocessed([], 5) is None  # nothing processed: nothing to commit


def test_records_lost_at_the_tail_are_found_by_the_position() -> None:
    # committed 53, the client handed out 53 (position 54), nothing processed or in flight: 53 was lost
    assert unprocessed_tail(54, 53, [], busy=False) == 53
    assert unprocessed_tail(3, None, [], busy=False) == 0  # never committed: from the partition's start
    assert unprocessed_tail(54, 53, [], busy=True) is None  # 53 is being processed
    assert unprocessed_tail(54, 53, [53], busy=False) is None  # processed, the commit has not run yet
    assert unprocessed_tail(53, 53, [], busy=False) is None  # all handed out records were committed
    assert unprocessed_tail(None, 53, [], busy=False) is None  # position unknown (being reset)
