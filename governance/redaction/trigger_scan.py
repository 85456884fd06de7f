"""One multi-pattern scan per text: which recognizers' triggers occur in it, so only those are asked.

Every Sluice recognizer declares ``TRIGGER_PATTERNS`` (``Prefiltered.trigger_patterns``): regexes one of
which matches any text its ``may_match`` accepts (and, where it sets ``TRIGGER_ALSO``, one of those too). All of them, for all recognizers of a language, are
compiled into one RE2 set (a lazily built DFA over UTF-8, in C++); a text is scanned once and only the
recognizers whose trigger fired go on to their own ``may_match`` and patterns. The trigger is a necessary
condition, never the decision, so the findings are those of asking every recognizer.

A recognizer is asked without a scan where it has no trigger (Presidio's stock recognizers; a test that
cannot be written as a regex) and, when the text comes with a JSON key, where ``keyed`` says the key alone
may make it match (asked once per key: keys repeat far more than texts). Every recognizer is asked where the scan cannot answer: a text that is not valid UTF-8
(a lone surrogate), or a DFA out of memory (RE2 then reports no match at all, which the empty pattern
always in the set shows).

RE2 over Hyperscan, by ``python -m bench.trigger_engines`` (the 75 triggers of the shipped settings, the
texts of 20 benchmark trajectories): the set compiles in 0.02 s against Hyperscan's 9.7 s (Unicode classes
and case folding blow up its compile, paid by every stage start and test), and scans a text in 3.4 us once
its lazily built DFA has met such texts (34 us on the first pass) against Hyperscan's 13.9 us (it reports
matches through a Python callback).

    python -c "from governance.redaction.engine_provider import build_engines; \
from governance.config import RedactionConfig; from governance.redaction.trigger_scan import TriggerScan; \
print(TriggerScan(build_engines(RedactionConfig()).recognizers).candidates('mail ana@example.com', None))"
"""

from __future__ import annotations

from collections.abc import Sequence

import re2
from presidio_analyzer import EntityRecognizer

from governance.redaction.recognizers.base import Prefiltered

_KEYS_KEPT = 4096  # distinct JSON keys whose answer is remembered (then forgotten all at once)
_HITS_KEPT = 4096  # distinct (patterns fired, JSON key) whose candidates are remembered, the same way
_MAX_MEM = 64 << 20  # the DFA's cache: far more than the triggers need on long texts


def re2_syntax(pattern: str) -> str:
    """A trigger in RE2's dialect: ``\\d`` and ``\\w`` as wide as Python's (RE2's are ASCII only)."""
    return pattern.replace(r"\d", r"\p{Nd}").replace(r"\w", r"[\p{L}\p{N}\p{M}_]")


_Compiled = tuple["re2.Set", list[tuple[int, int]], dict[int, int]]
_SETS: dict[tuple[tuple[int, tuple[str, ...], tuple[str, ...]], ...], _Compiled] = {}


def _compiled(triggers: tuple[tuple[int, tuple[str, ...], tuple[str, ...]], ...]) -> _Compiled:
    """The RE2 set of ``triggers`` ((recognizer, patterns, also) each), with which recognizer and which part
    of its condition each pattern stands for, and the parts each recognizer needs. One per process for
    the same triggers, so the DFA that a set builds lazily as it meets texts is built once: a redactor
    built again (a config reload, another stage, a test) starts with it warm. Matching a set from
    several threads is safe (RE2 locks its DFA cache)."""
    found = _SETS.get(triggers)
    if found is not None:
        return found
    options = re2.Options()
    options.max_mem = _MAX_MEM
    options.log_errors = False
    rx_set = re2.Set.SearchSet(options)
    rx_set.Add("")  # index 0 matches every text: its absence means the scan failed
    owner: list[tuple[int, int]] = [(-1, 0)]  # pattern -> (recognizer, bit of its condition)
    needs: dict[int, int] = {}  # recognizer -> the bits that must all be set
    for i, patterns, also in triggers:
        needs[i] = 3 if also else 1
        for bit, group in ((1, patterns), (2, also)):
            for p in group:
                rx_set.Add(re2_syntax(p))
                owner.append((i, bit))
    rx_set.Compile()
    _SETS[triggers] = (rx_set, owner, needs)
    return _SETS[triggers]


class TriggerScan:
    """The triggers of one language's recognizers (indexes into ``recognizers``), compiled once."""

    def __init__(self, recognizers: Sequence[EntityRecognizer]) -> None:
        always: list[int] = []
        triggers: list[tuple[int, tuple[str, ...], tuple[str, ...]]] = []
        for i, r in enumerate(recognizers):
            patterns = r.trigger_patterns() if isinstance(r, Prefiltered) else None
            if patterns is None:
                always.append(i)
            else:
                triggers.append((i, tuple(patterns), tuple(r.TRIGGER_ALSO) if patterns else ()))
        self._set, owner, self._needs = _compiled(tuple(triggers))
        self._owner = owner
        self.patterns = len(owner) - 1
        self.everyone = tuple(range(len(recognizers)))
        self.always = frozenset(always)
        self._keyable = [(i, r) for i, r in enumerate(recognizers) if isinstance(r, Prefiltered)]
        self._by_key: dict[tuple[str, ...], frozenset[int]] = {}
        self._by_hits: dict[tuple[tuple[int, ...], tuple[str, ...] | None], tuple[int, ...]] = {}

    def keyed(self, context: list[str]) -> frozenset[int]:
        """The recognizers to ask for any text under the JSON key ``context`` (remembered per key)."""
        key = tuple(context)
        found = self._by_key.get(key)
        if found is None:
            if len(self._by_key) >= _KEYS_KEPT:
                self._by_key.clear()
            found = self.always | {i for i, r in self._keyable if r.keyed(context)}
            self._by_key[key] = found
        return found

    def candidates(self, text: str, context: list[str] | None) -> list[int]:
        """Indexes of the recognizers to ask about ``text`` (registry order): triggered, untriggerable,
        and with a JSON key the ones a key alone may decide."""
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: no valid UTF-8 to scan
            return list(self.everyone)
        hits = self._set.Match(data)
        if not hits:  # not even the empty pattern: the DFA ran out of memory
            return list(self.everyone)
        # the answer is a function of the patterns that fired and the key: texts repeat a few combinations
        asked = (tuple(hits), tuple(context) if context else None)
        found = self._by_hits.get(asked)
        if found is None:
            if len(self._by_hits) >= _HITS_KEPT:
                self._by_hits.clear()
            found = self._by_hits[asked] = self._decide(hits, context)
        return list(found)

    def _decide(self, hits: list[int], context: list[str] | None) -> tuple[int, ...]:
        fired = set(self.keyed(context) if context else self.always)
        owner = self._owner
        bits: dict[int, int] = {}
        for h in hits:
            i, bit = owner[h]
            bits[i] = bits.get(i, 0) | bit
        needs = self._needs
        fired.update(i for i, b in bits.items() if i >= 0 and b == needs[i])
        return tuple(sorted(fired))
