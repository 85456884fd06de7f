"""PERSON by key: a name-shaped value under a key that names a person (``customer_name``, ``assignee``).

JSON values and CSV cells are analysed with their key or column header as context (``key_context``
decides which keys name a person: ``first_name``, ``last_name``, ``contact``, ``<role>_name`` …). A
value written like a personal name there is a name, in any locale, without NER: ``{"last_name":
"Kobayashi"}``, ``{"customer_name": "Chiara Esposito"}``. ``Name <address>`` values (``contact``) give
their name part. Values that are not name-shaped (``"n/a"``, ``"billing"``, ids) are left alone.

No trigger pattern can be written for it (``TRIGGER_PATTERNS`` is empty): the key decides, not the text, so
the scan asks it only for values under a key that names a person (``keyed``).
"""

from __future__ import annotations

import re

from presidio_analyzer import RecognizerResult
from presidio_analyzer.nlp_engine import NlpArtifacts

from governance.redaction.key_context import names_kind
from governance.redaction.recognizers.base import SluiceLocalRecognizer
from governance.redaction.recognizers.name_shape import name_tokens, native_name

_NAME_PART = re.compile(r"^\s*(?P<v>[^<>,;\"()\d@]{2,80}?)\s*(?:<[^>]*>|\([^)]*\))?\s*$")
SCORE = 0.85


def _names_person(context: list[str] | None) -> bool:
    return bool(context) and any("PERSON" in names_kind(c) for c in context or ())


class PersonKeyRecognizer(SluiceLocalRecognizer):
    ENTITY = "PERSON"
    TRIGGER_PATTERNS = ()  # the key alone decides

    def keyed(self, context: list[str]) -> bool:
        return _names_person(context)

    def may_match(self, text: str, context: list[str] | None = None) -> bool:
        return len(text) <= 200 and _names_person(context)

    def analyze(
        self, text: str, entities: list[str], nlp_artifacts: NlpArtifacts | None = None
    ) -> list[RecognizerResult]:
        return []

    def from_key(self, text: str, context: list[str] | None) -> RecognizerResult | None:
        if not _names_person(context):
            return None
        m = _NAME_PART.match(text)
        if m is None or (name_tokens(m.group("v")) is None and not native_name(m.group("v"))):
            return None
        start, end = m.span("v")
        return self.result(start, end, SCORE, by_key=True)
