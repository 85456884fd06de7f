"""Content-hash LRU cache of analyzer findings: text already analysed is never analysed again.

Keyed by SHA-256 of (context, text), so the cache holds no raw text, only digests and spans. Agents
that re-send their whole history (no proxy linking) hit the cache for every old message; placeholders
are still applied per trajectory from the findings, so cached and fresh results redact identically.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import NamedTuple


class Finding(NamedTuple):
    """One detected span. Never holds the value itself."""

    entity_type: str
    start: int
    end: int
    score: float
    recognizer: str


def cache_key(text: str, context: tuple[str, ...] | None) -> bytes:
    h = hashlib.sha256(text.encode("utf-8", "surrogatepass"))
    if context:
        h.update(b"\x00ctx\x00" + "\x1f".join(context).encode("utf-8", "surrogatepass"))
    return h.digest()


class AnalysisCache:
    """Bounded LRU: digest -> findings. ``size`` 0 disables it."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._data: OrderedDict[bytes, tuple[Finding, ...]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: bytes) -> tuple[Finding, ...] | None:
        found = self._data.get(key)
        if found is None:
            self.misses += 1
            return None
        self._data.move_to_end(key)
        self.hits += 1
        return found

    def put(self, key: bytes, findings: tuple[Finding, ...]) -> None:
        if self.size <= 0:
            return
        self._data[key] = findings
        self._data.move_to_end(key)
        if len(self._data) > self.size:
            self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: bytes) -> bool:
        """Whether ``key`` is held (no hit or miss counted, its place in the LRU order kept)."""
        return key in self._data
