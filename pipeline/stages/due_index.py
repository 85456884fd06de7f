"""The timer's index of pending trajectories: partition -> trajectory id -> next due time.

In memory, one small entry per trajectory of this worker's active partitions (the states themselves are
in the disk-backed tables). Rebuilt from the ``join_state`` table when partitions are assigned
(``storage.peek_due`` reads a few bytes per state), dropped when they are revoked. A min-heap with lazy
deletion gives the due entries without scanning.
"""

from __future__ import annotations

import heapq


class DueIndex:
    def __init__(self) -> None:
        self._due: dict[int, dict[str, float]] = {}
        self._heap: list[tuple[float, int, str]] = []

    @property
    def partitions(self) -> set[int]:
        return set(self._due)

    def __len__(self) -> int:
        return sum(len(d) for d in self._due.values())

    def drop_partition(self, partition: int) -> None:
        self._due.pop(partition, None)

    def set(self, partition: int, trajectory_id: str, due_at: float | None) -> None:
        """Record (or with ``due_at=None`` forget) when a trajectory must be looked at again."""
        entries = self._due.setdefault(partition, {})
        if due_at is None:
            entries.pop(trajectory_id, None)
            return
        if entries.get(trajectory_id) == due_at:
            return
        entries[trajectory_id] = due_at
        heapq.heappush(self._heap, (due_at, partition, trajectory_id))

    def due_at(self, partition: int, trajectory_id: str) -> float | None:
        return self._due.get(partition, {}).get(trajectory_id)

    def pop_due(self, now: float, limit: int = 10_000) -> list[tuple[int, str]]:
        """Remove and return up to ``limit`` (partition, trajectory id) due at ``now`` or earlier."""
        out: list[tuple[int, str]] = []
        while self._heap and self._heap[0][0] <= now and len(out) < limit:
            due, partition, tid = heapq.heappop(self._heap)
            entries = self._due.get(partition)
            if entries is None or entries.get(tid) != due:
                continue  # stale heap entry: re-scheduled, removed, or partition revoked
            del entries[tid]
            out.append((partition, tid))
        return out
