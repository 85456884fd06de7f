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
from governance.redaction.recognizers.name_shape import PERSON_CUE_BEFORE, name_tokens, product_like

NER_ENTITIES = ("PERSON", "LOCATION")
_CAP = r"[A-ZÀ-ÖØ-ÞĀ-ſ][a-zß-öø-ÿā-ſ'’\-]+"
_SALUTATIONS = "dear hi hello mr mrs ms dr herr frau mme señor señora sr sra signor signora monsieur madame"
_TWO_CAPITALISED = _CAP + r"[ \t]+(?:(?:van|der|de|da|di|del|von|le|la|du|dos|bin|al|el)[ \t]+)*" + _CAP
_SALUTED = r"(?i:" + _SALUTATIONS.replace(" ", "|") + r")\.?[ \t]+[A-Z]"
NAME_CANDIDATE = re.compile(_TWO_CAPITALISED + "|" + _SALUTED)
_TWO_CAPITALISED_RX = re.compile(_TWO_CAPITALISED)
_SALUTED_RX = re.compile(_SALUTED)
_SALUTATION_WORDS = frozenset(_SALUTATIONS.split())


class PersonLocationRecognizer(Prefiltered, SpacyRecognizer):
    PREFILTER = NAME_CANDIDATE

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
        return [r for r in super().analyze(text, entities, nlp_artifacts) if plausible(r, text)]


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
