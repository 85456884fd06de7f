"""The recognizer plug point: a Presidio ``PatternRecognizer`` with a cheap prefilter and key context.

Departs from Presidio's pattern recognizer in three ways, all for speed or recall on agent traffic:

- ``may_match(text)``: a cheap test (a substring or a tiny regex) run before any real pattern; texts
  that cannot contain the entity skip the recognizer entirely. Most agent text has no ``@``, no key
  prefix and few long digit runs.
- a pattern may capture the value in a group named ``v``: only that group is reported, so
  ``aws_secret_access_key = wJalr...`` redacts the key and keeps the name.
- ``KEY_CONTEXT``: words that, found in the JSON key a value sits under (passed as ``context``), lift a
  weak match to ``KEY_CONTEXT_SCORE``. The no-op NLP engine has no tokens, so Presidio's lemma enhancer
  cannot see context words in the text itself; explicit context is what we have.

- ``TRIGGER_PATTERNS``: regexes one of which occurs in every text ``may_match`` accepts; all recognizers'
  triggers are scanned at once per text (``governance/redaction/trigger_scan.py``) and ``may_match`` is
  asked only where a trigger fired, or where ``keyed`` says the JSON key alone may decide.

Each implementation is one file named after what it recognizes.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import ClassVar

from presidio_analyzer import (
    AnalysisExplanation,
    EntityRecognizer,
    LocalRecognizer,
    Pattern,
    PatternRecognizer,
    RecognizerResult,
)
from presidio_analyzer.nlp_engine import NlpArtifacts

CASE_SENSITIVE = re.DOTALL | re.MULTILINE
_WORD_SPLIT = re.compile(r"[^0-9a-z]+")
_LETTER_RUN = re.compile(r"[^\W\d_]+")
_ASCII_LETTER_RUN = re.compile(r"[a-z]+")  # the same runs on ASCII text, ~3x sooner


@lru_cache(maxsize=16)
def lowered(text: str) -> str:
    """``text.lower()``, remembered for the last texts: the recognizers asked about one text share it
    instead of each lower-casing the whole text again."""
    return text.lower()


@lru_cache(maxsize=16)
def letter_words(text: str) -> frozenset[str]:
    """The lower-cased runs of letters in ``text``; several prefilters of one text share them.

    A case-insensitive alternation of cue words (``(?i)\\b(?:dear|hello|…)\\b``) costs a try of every
    branch at every position in Python's ``re``; one scan for letter runs and a set test decide first
    whether any cue word occurs at all. A word the regex matches between word boundaries is always one
    of these runs, so the test never hides a match.
    """
    low = lowered(text)
    return frozenset((_ASCII_LETTER_RUN if low.isascii() else _LETTER_RUN).findall(low))


def has_any_word(text: str, words: frozenset[str]) -> bool:
    """Whether one of ``words`` (lower case, letters only) occurs in ``text`` as a whole letter run."""
    return not words.isdisjoint(letter_words(text))


NUMBER_RUN = r"\d[\d \t().\-/]{6}"
_NUMBER_RUN = re.compile(NUMBER_RUN)


@lru_cache(maxsize=16)
def has_number_run(text: str) -> bool:
    """Whether ``text`` holds a digit followed by six more digits or number separators (space, tab,
    ``( ) . - /``). Card, SSN, phone and IPv4 prefilters match only such characters, from a digit, over at
    least seven of them: one scan shared by the four decides first whether any can match."""
    return _NUMBER_RUN.search(text) is not None


def any_of(words: object, caseless: bool = False) -> str:
    """A trigger regex matching any of ``words`` as written (``caseless``: in any case)."""
    body = "|".join(sorted({re.escape(str(w)) for w in words}))  # type: ignore[attr-defined]
    return ("(?i)" if caseless else "") + "(?:" + body + ")"


def whole_words(words: object) -> str:
    """A trigger regex matching any of ``words`` (lower case) as a whole letter run in any case: what
    ``has_any_word`` tests (a letter run's ends are never letters, so ``\\P{L}`` bounds it)."""
    return r"(?i)(?:^|\P{L})" + any_of(words) + r"(?:\P{L}|$)"


def vocabulary(spaced: str) -> frozenset[str]:
    """The words of a space-separated vocabulary (a long list of words reads best as one string)."""
    return frozenset(spaced.split())


def context_words(context: list[str] | None) -> set[str]:
    """Lower-cased words of the context strings: ``["aws_secret_access_key"]`` -> {aws, secret, ...}."""
    words: set[str] = set()
    for c in context or ():
        low = c.lower()
        words.add(low)
        words.update(w for w in _WORD_SPLIT.split(low) if w)
    return words


class Prefiltered:
    """Mixin: ``may_match`` says whether a recognizer could find anything in a text (cheaply).

    ``TRIGGERS``: substrings of which at least one must occur (a plain ``in`` test, far cheaper than
    any regex); then ``PREFILTER``, a small regex, must match. Either may be left empty. A number
    recognizer sets ``NEEDS_NUMBER_RUN`` when its ``PREFILTER`` can only match where ``has_number_run``
    does, so texts without such a run skip it after one shared scan.
    """

    TRIGGERS: ClassVar[tuple[str, ...]] = ()
    PREFILTER: ClassVar[re.Pattern[str] | None] = None
    NEEDS_NUMBER_RUN: ClassVar[bool] = False  # PREFILTER matches only within a run ``has_number_run`` finds
    # Regexes (Hyperscan syntax, UTF-8 with Unicode properties) one of which matches every text that
    # ``may_match(text)`` accepts without a context; ``()``: none does (the key alone decides). ``None``:
    # derived from TRIGGERS / PREFILTER where ``may_match`` is this class's, else no trigger can be written.
    TRIGGER_PATTERNS: ClassVar[tuple[str, ...] | None] = None
    TRIGGER_ALSO: ClassVar[tuple[str, ...]] = ()  # a second condition: one of these must match as well

    @classmethod
    def trigger_patterns(cls) -> tuple[str, ...] | None:
        """The trigger regexes of ``may_match``; None where it cannot be written as one (always asked)."""
        if cls.TRIGGER_PATTERNS is not None:
            return cls.TRIGGER_PATTERNS
        if getattr(cls, "may_match", None) is not Prefiltered.may_match:
            return None
        if cls.TRIGGERS:
            return tuple(re.escape(t) for t in cls.TRIGGERS)
        if cls.PREFILTER is not None:
            return (cls.PREFILTER.pattern,)
        return (NUMBER_RUN,) if cls.NEEDS_NUMBER_RUN else None

    def keyed(self, context: list[str]) -> bool:
        """Whether the JSON key ``context`` may make ``may_match`` accept a text its trigger is absent from
        (a value under ``shipping_address``); only a function of the key, so it is asked once per key."""
        return False

    def may_match(self, text: str, context: list[str] | None = None) -> bool:
        if self.NEEDS_NUMBER_RUN and not has_number_run(text):
            return False
        if self.TRIGGERS:
            for t in self.TRIGGERS:
                if t in text:
                    break
            else:
                return False
        return self.PREFILTER is None or self.PREFILTER.search(text) is not None


class SluiceRecognizer(Prefiltered):
    """Mixin of every Sluice recognizer: one way to build a finding, and JSON-key context.

    ``KEY_CONTEXT``: words that, in the JSON key a value sits under, lift a weak finding to
    ``KEY_CONTEXT_SCORE`` (empty: findings are left as they are). ``from_key`` may instead report the
    whole value from the key alone (a secret- or person-named key); it replaces the findings when it does.
    """

    ENTITY: ClassVar[str]
    KEY_CONTEXT: ClassVar[frozenset[str]] = frozenset()
    KEY_CONTEXT_SCORE: ClassVar[float] = 0.85

    def result(
        self, start: int, end: int, score: float, pattern_name: str | None = None, *, by_key: bool = False
    ) -> RecognizerResult:
        """A finding of ``ENTITY`` at ``start:end``; ``by_key`` marks it as found by the JSON key."""
        metadata: dict[str, object] = {
            RecognizerResult.RECOGNIZER_NAME_KEY: self.name,
            RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: self.id,
        }
        if by_key:
            metadata[RecognizerResult.IS_SCORE_ENHANCED_BY_CONTEXT_KEY] = True
        return RecognizerResult(
            entity_type=self.ENTITY,
            start=start,
            end=end,
            score=score,
            analysis_explanation=AnalysisExplanation(
                recognizer=self.name, original_score=score, pattern_name=pattern_name
            ),
            recognition_metadata=metadata,
        )

    def analyze(
        self,
        text: str,
        entities: list[str] | None = None,
        nlp_artifacts: NlpArtifacts | None = None,
        regex_flags: int | None = None,
    ) -> list[RecognizerResult]:
        """What ``scan`` finds in ``text``, through ``refine``."""
        return self.refine(text, self.scan(text, entities, nlp_artifacts, regex_flags))

    def scan(self, text: str, *presidio_args: object) -> list[RecognizerResult]:
        """The findings before ``refine``: by default those of the Presidio recognizer mixed in after this."""
        return super().analyze(text, *presidio_args)

    def refine(self, text: str, results: list[RecognizerResult]) -> list[RecognizerResult]:
        """The findings to report of those the patterns made (drop or rescore over-matches)."""
        return results

    def from_key(self, text: str, context: list[str] | None) -> RecognizerResult | None:
        """The whole value as one finding, decided by its JSON key alone; None: no such rule."""
        return None

    def enhance_using_context(
        self,
        text: str,
        raw_recognizer_results: list[RecognizerResult],
        other_raw_recognizer_results: list[RecognizerResult],
        nlp_artifacts: NlpArtifacts | None,
        context: list[str] | None = None,
    ) -> list[RecognizerResult]:
        whole = self.from_key(text, context)
        if whole is not None:
            return [whole]
        return boost_by_key_context(raw_recognizer_results, context, self.KEY_CONTEXT, self.KEY_CONTEXT_SCORE)


class SluicePatternRecognizer(SluiceRecognizer, PatternRecognizer):
    """Base of Sluice's own pattern recognizers (class attributes configure a subclass)."""

    PATTERNS: ClassVar[list[Pattern]]
    CONTEXT: ClassVar[list[str]] = []
    FLAGS: ClassVar[int] = CASE_SENSITIVE
    VERSION: ClassVar[str] = "1"

    def __init__(self, supported_language: str = "en") -> None:
        super().__init__(
            supported_entity=self.ENTITY,
            name=type(self).__name__,
            supported_language=supported_language,
            patterns=[Pattern(p.name, p.regex, p.score) for p in self.PATTERNS],
            context=list(self.CONTEXT) or None,
            global_regex_flags=self.FLAGS,
            version=self.VERSION,
        )
        self._compiled = [(p, re.compile(p.regex, self.FLAGS)) for p in self.patterns]

    def compiled_for(self, text: str) -> list[tuple[Pattern, re.Pattern[str]]]:
        """The patterns worth running over ``text`` (all of them unless a subclass knows better)."""
        return self._compiled

    def scan(self, text: str, *presidio_args: object) -> list[RecognizerResult]:
        """Every pattern over ``text``: the value group ``v`` where a pattern has one, else the match."""
        results: list[RecognizerResult] = []
        for pattern, rx in self.compiled_for(text):
            for m in rx.finditer(text):
                start, end = m.span("v") if "v" in rx.groupindex else m.span()
                if start < 0 or start == end:
                    continue
                value = text[start:end]
                score = pattern.score
                valid = self.validate_result(value)
                if valid is not None:
                    score = EntityRecognizer.MAX_SCORE if valid else EntityRecognizer.MIN_SCORE
                if self.invalidate_result(value):
                    score = EntityRecognizer.MIN_SCORE
                if score > EntityRecognizer.MIN_SCORE:
                    results.append(self.result(start, end, score, pattern.name))
        return EntityRecognizer.remove_duplicates(results) if len(results) > 1 else results


class SluiceLocalRecognizer(SluiceRecognizer, LocalRecognizer):
    """Base of Sluice's own recognizers written as code rather than patterns: one entity, nothing to load."""

    def __init__(self, supported_language: str = "en", **kwargs: object) -> None:
        super().__init__(
            supported_entities=[self.ENTITY],
            supported_language=supported_language,
            name=type(self).__name__,
            **kwargs,
        )

    def load(self) -> None:
        pass


class RefinedPresidio(SluiceRecognizer):
    """Mixin over one of Presidio's own recognizers: named after the subclass, its findings passed
    through ``refine`` (drop or rescore what Presidio's patterns over-match)."""

    def __init__(self, supported_language: str = "en") -> None:
        super().__init__(supported_language=supported_language, name=type(self).__name__)


def boost_by_key_context(
    results: list[RecognizerResult],
    context: list[str] | None,
    key_words: frozenset[str] | set[str],
    score: float,
) -> list[RecognizerResult]:
    """Raise weak findings to ``score`` when the JSON key (the context) names the entity, e.g.
    ``{"mobile": "2125550143"}``. Results are updated in place, as Presidio's enhancers do."""
    if not key_words or not context or not results or context_words(context).isdisjoint(key_words):
        return results
    for r in results:
        if r.score < score:
            r.score = score
            r.recognition_metadata[RecognizerResult.IS_SCORE_ENHANCED_BY_CONTEXT_KEY] = True
    return results


def luhn_valid(digits: str) -> bool:
    """Luhn checksum of a digit string (card numbers)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0
