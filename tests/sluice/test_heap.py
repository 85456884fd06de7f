"""settle_heap: what is alive at startup leaves the collector's scans; later objects are still collected."""

from __future__ import annotations

import gc
import weakref

from sluice.heap import settle_heap


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the collector frees it


def test_settle_heap_freezes_the_startup_heap_and_still_collects_later_cycles() -> None:
    threshold = gc.get_threshold()
    kept = _Node()
    try:
        alive = len(gc.get_objects())
        frozen = settle_heap(gen0_threshold=12_345)
        assert frozen >= alive * 0.9 and gc.get_freeze_count() == frozen
        assert gc.get_threshold()[0] == 12_345 and gc.get_threshold()[1:] == threshold[1:]
        assert all(o is not kept for o in gc.get_objects())  # frozen objects are out of every scan
        later = _Node()
        ref = weakref.ref(later)
        del later
        gc.collect()
        assert ref() is None  # a cycle made after settling is still found and freed
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
