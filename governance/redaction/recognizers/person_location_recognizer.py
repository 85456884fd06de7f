"""PERSON and LOCATION from the offline spaCy model (``RedactionConfig.ner``), with a precision guard.

Presidio runs the spaCy pipeline in its NLP engine and this recognizer reads the entities from the
artifacts. The small English model tags product names, ticket ids and version strings as people and
places (``Kubernetes``, ``Tesla Model Y``, ``SEC-2849``), so its spans pass a guard first
(``name_shape``): a PERSON must be written like a personal name and not like a product, and a single
word needs a salutation or an honorific before it (``Dear Haruto``, ``Herr Weber``); a LOCATION must
be words of letters. The prefilter (two capitalised words in a row, or a salutation before one) lets
the analyzer skip spaCy for texts that cannot hold a name, which is most tool output.
"""

from __future__ import annotations

import re

from presidio_analyzer import RecognizerResult
from presidio_analyzer.nlp_engine import NlpArtifacts
from presidio_analyzer.predefined_recognizers import SpacyRecognizer

from governance.redaction.recognizers.base import Prefiltered, has_any_word
from governance.redaction.recognizers.name_lexicon import GIVEN_NAMES
from governance.redaction.recognizers.name_shape import (
    PERSON_CUE_BEFORE,
    PRODUCT_WORDS,
    name_tokens,
    product_like,
)

NER_ENTITIES = ("PERSON", "LOCATION")
_CAP = r"[A-ZÀ-ÖØ-ÞĀ-ſƠƯẠ-Ỹ][a-zß-öø-ÿā-ſơưạ-ỹ'’\-]+"  # Vietnamese letters too: "Nguyễn Thị"
_SALUTATIONS = "dear hi hello mr mrs ms dr herr frau mme señor señora sr sra signor signora monsieur madame"
_TWO_CAPITALISED = _CAP + r"[ \t]+(?:(?:van|der|de|da|di|del|von|le|la|du|dos|bin|al|el)[ \t]+)*" + _CAP
_SALUTED = r"(?i:" + _SALUTATIONS.replace(" ", "|") + r")\.?[ \t]+[A-Z]"
NAME_CANDIDATE = re.compile(_TWO_CAPITALISED + "|" + _SALUTED)
_TWO_CAPITALISED_RX = re.compile(_TWO_CAPITALISED)
_SALUTED_RX = re.compile(_SALUTED)
_SALUTATION_WORDS = frozenset(_SALUTATIONS.split())


class PersonLocationRecognizer(Prefiltered, SpacyRecognizer):
    PREFILTER = NAME_CANDIDATE
    TRIGGER_PATTERNS = (NAME_CANDIDATE.pattern,)

    def may_match(self, text: str, context: list[str] | None = None) -> bool:
        """``NAME_CANDIDATE``, its case-insensitive salutation branch searched only where a salutation
        word occurs (that branch alone costs more than all the rest)."""
        if _TWO_CAPITALISED_RX.search(text) is not None:
            return True
        return has_any_word(text, _SALUTATION_WORDS) and _SALUTED_RX.search(text) is not None

    def __init__(self, entities: list[str] | None = None, supported_language: str = "en") -> None:
        super().__init__(
            supported_language=supported_language,
            supported_entities=list(entities or NER_ENTITIES),
            name=type(self).__name__,
        )

    def analyze(
        self, text: str, entities: list[str], nlp_artifacts: NlpArtifacts | None = None
    ) -> list[RecognizerResult]:
        found = [r for r in super().analyze(text, entities, nlp_artifacts) if plausible(r, text)]
        for r in found:
            if r.entity_type == "PERSON":
                r.start, r.end = whole_name(text, r.start, r.end)
        return found


_HYPHENED_BEFORE = re.compile(r"[^\W\d_]+-$")
_HYPHENED_AFTER = re.compile(r"-[^\W\d_]+")
_NEXT_WORD = re.compile(r"[ \t]+([^\W\d_][^\W\d_'’\-]*)")
_PREV_WORD = re.compile(r"([^\W\d_][^\W\d_'’\-]*)[ \t]+$")


def whole_name(text: str, start: int, end: int) -> tuple[int, int]:
    """The model's span widened to the whole name: the other half of a hyphenated part (``Karl-`` before
    ``Heinz``, ``-Bauer`` after ``Schmidt``), the capitalised parts that follow (``Ana Beatriz`` +
    ``Nascimento Araújo``, up to five words in all) and the known given names just before."""
    m = _HYPHENED_BEFORE.search(text, max(0, start - 25), start)
    if m is not None and m.group()[0].isupper():
        start = m.start()
    m = _HYPHENED_AFTER.match(text, end)
    if m is not None and m.group()[1].isupper():
        end = m.end()
    while len(text[start:end].split()) < 6:
        m = _NEXT_WORD.match(text, end)
        if m is None or not m.group(1)[0].isupper() or m.group(1).lower() in PRODUCT_WORDS:
            break
        if name_tokens(text[start : m.end()]) is None:
            break
        end = m.end()
    while len(text[start:end].split()) < 5:
        m = _PREV_WORD.search(text, max(0, start - 25), start)
        if m is None or m.group(1).lower() not in GIVEN_NAMES or not m.group(1)[0].isupper():
            break
        start = m.start()
    return start, end


def plausible(r: RecognizerResult, text: str) -> bool:
    """The precision guard: does the span read as a person's name (or a place), here?"""
    span = text[r.start : r.end].strip()
    if r.entity_type == "LOCATION":
        return name_tokens(span) is not None and not any(c.isdigit() for c in span)
    if product_like(span, text, r.end, r.start):
        return False
    if len(span.split()) == 1:
        line_start = text.rfind("\n", 0, r.start) + 1
        return PERSON_CUE_BEFORE.search(text, max(line_start, r.start - 40), r.start) is not None
    return True
