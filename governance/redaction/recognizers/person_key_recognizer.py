"""PERSON by key: a name-shaped value under a key that names a person (``customer_name``, ``assignee``).

JSON values and CSV cells are analysed with their key or column header as context (``key_context``
decides which keys name a person: ``first_name``, ``last_name``, ``contact``, ``<role>_name`` …). A
value written like a personal name there is a name, in any locale, without NER: ``{"last_name":
"Kobayashi"}``, ``{"customer_name": "Chiara Esposito"}``. ``Name <address>`` values (``contact``) give
their name part. Values that are not name-shaped (``"n/a"``, ``"billing"``, ids) are left alone.
"""

from __future__ import annotations

import re

from presidio_analyzer import AnalysisExplanation, LocalRecognizer, RecognizerResult
from presidio_analyzer.nlp_engine import NlpArtifacts

from governance.redaction.key_context import names_kind
from governance.redaction.recognizers.base import Prefiltered
from governance.redaction.recognizers.name_shape import name_tokens

_NAME_PART = re.compile(r"^\s*(?P<v>[^<>,;\"()\d@]{2,80}?)\s*(?:<[^>]*>|\([^)]*\))?\s*$")
SCORE = 0.85


def _names_person(context: list[str] | None) -> bool:
    return bool(context) and any("PERSON" in names_kind(c) for c in context or ())


class PersonKeyRecognizer(Prefiltered, LocalRecognizer):
    ENTITY = "PERSON"

    def __init__(self, supported_language: str = "en") -> None:
        super().__init__(
            supported_entities=[self.ENTITY], supported_language=supported_language, name=type(self).__name__
        )

    def load(self) -> None:
        pass

    def may_match(self, text: str, context: list[str] | None = None) -> bool:
        return len(text) <= 200 and _names_person(context)

    def analyze(
        self, text: str, entities: list[str], nlp_artifacts: NlpArtifacts | None = None
    ) -> list[RecognizerResult]:
        return []

    def enhance_using_context(
        self,
        text: str,
        raw_recognizer_results: list[RecognizerResult],
        other_raw_recognizer_results: list[RecognizerResult],
        nlp_artifacts: NlpArtifacts | None,
        context: list[str] | None = None,
    ) -> list[RecognizerResult]:
        if not _names_person(context):
            return raw_recognizer_results
        m = _NAME_PART.match(text)
        if m is None or name_tokens(m.group("v")) is None:
            return raw_recognizer_results
        start, end = m.span("v")
        return [
            RecognizerResult(
                entity_type=self.ENTITY,
                start=start,
                end=end,
                score=SCORE,
                analysis_explanation=AnalysisExplanation(recognizer=self.name, original_score=SCORE),
                recognition_metadata={
                    RecognizerResult.RECOGNIZER_NAME_KEY: self.name,
                    RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: self.id,
                    RecognizerResult.IS_SCORE_ENHANCED_BY_CONTEXT_KEY: True,
                },
            )
        ]
