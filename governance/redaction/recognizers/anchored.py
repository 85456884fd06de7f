"""A pattern whose every match begins with one of a few words, tried on ASCII text only where they occur.

Python's ``re`` tries a case-insensitive alternation (``(?i)(?:password|passwd|…)``) at every position of
a text; finding the words first (``str.find`` on the lower-cased text) and trying the pattern only there
gives the same matches, in the same order, at a fraction of the cost on long texts. On ASCII text,
lower-casing keeps every position and ``(?i)`` folds exactly as ``str.lower`` does; any other text is
scanned the ordinary way. A match that begins elsewhere would be missed, so ``starts`` must hold the
first word of every alternative the pattern can begin with (the tests check it on every evaluation
text).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from governance.redaction.recognizers.base import lowered


class Anchored:
    """``rx.finditer`` for a pattern whose matches all begin with one of ``starts`` (lower-case ASCII)."""

    def __init__(self, rx: re.Pattern[str], starts: tuple[str, ...]) -> None:
        if not all(s.isascii() and s == s.lower() and s for s in starts):
            raise ValueError("anchor words must be non-empty lower-case ASCII")
        self.rx = rx
        self.pattern = rx.pattern
        self.groupindex: Mapping[str, int] = rx.groupindex
        self.starts = starts

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        if not text.isascii():
            yield from self.rx.finditer(text)
            return
        low = lowered(text)
        at: set[int] = set()
        for word in self.starts:
            i = low.find(word)
            while i != -1:
                at.add(i)
                i = low.find(word, i + 1)
        end = 0
        for p in sorted(at):
            if p < end:
                continue
            m = self.rx.match(text, p)
            if m is not None:
                yield m
                end = max(m.end(), p + 1)
