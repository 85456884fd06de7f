"""Publishing: how long responses waited for the write-ahead log's group commit (log-spaced buckets).

Recording costs one bisect; a snapshot is a tuple of counts, so two snapshots taken around a load run
subtract into the distribution of that run alone (what ``bench.proxy`` reports as the log's wait,
measured inside the proxy where the noise of a shared machine does not reach it). Bucket ``i`` counts
waits up to ``BOUNDS_S[i]`` (25 % steps from 1 µs to ~10 s); the last one, everything longer.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

BOUNDS_S: tuple[float, ...] = tuple(1e-6 * 1.25**i for i in range(73))


class CommitWaits:
    def __init__(self) -> None:
        self._counts = [0] * (len(BOUNDS_S) + 1)

    def observe(self, seconds: float) -> None:
        self._counts[bisect_left(BOUNDS_S, seconds)] += 1

    def snapshot(self) -> tuple[int, ...]:
        return tuple(self._counts)


def wait_quantile_ms(counts: Sequence[int], q: float) -> float | None:
    """The ``q`` quantile of a snapshot (or a difference of two), as its bucket's upper bound in ms: at
    most 25 % above the true value. None when nothing was recorded."""
    total = sum(counts)
    if total == 0:
        return None
    rank = q * total
    seen = 0
    for i, n in enumerate(counts):
        seen += n
        if seen >= rank and n:
            return 1000 * BOUNDS_S[min(i, len(BOUNDS_S) - 1)]
    return 1000 * BOUNDS_S[-1]
