"""Publishing: records the broker holds that have not landed yet (kept for a new cluster).

A record is *delivered* once the broker acknowledged it at an offset, and *landed* once the stages turned
it into state that outlives the broker (``landing.py`` says up to which offset, per partition). Per
partition the broker acknowledges records in offset order, so landing pops from the front of a queue.
"""

from __future__ import annotations

from collections import deque


class Deliveries:
    """seq -> partition of every delivered, unlanded record, with a per-partition queue in offset order."""

    def __init__(self) -> None:
        self._where: dict[int, str] = {}  # seq -> "topic|partition"
        self._order: dict[str, deque[tuple[int, int]]] = {}  # "topic|partition" -> (offset, seq)

    def __contains__(self, seq: int) -> bool:
        return seq in self._where

    def __len__(self) -> int:
        return len(self._where)

    def add(self, seq: int, tp: str, offset: int) -> None:
        self._where[seq] = tp
        self._order.setdefault(tp, deque()).append((offset, seq))

    def land(self, tp: str, below: int) -> list[tuple[int, int]]:
        """(seq, offset) of every record delivered to ``tp`` below offset ``below``, now landed."""
        order = self._order.get(tp)
        out: list[tuple[int, int]] = []
        while order and order[0][0] < below:
            offset, seq = order.popleft()
            if self._where.pop(seq, None) is not None:
                out.append((seq, offset))
        return out

    def forget(self) -> int:
        """Drop every delivery (they went to a cluster that is gone); returns how many."""
        n = len(self._where)
        self._where.clear()
        self._order.clear()
        return n
