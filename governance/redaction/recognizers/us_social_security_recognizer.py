"""US Social Security numbers: Presidio's recognizer plus JSON-key context, behind a cheap prefilter.

Presidio scores ``078-05-1120``-shaped numbers 0.5 and bare nine digits 0.05, and rejects never-issued
ranges (000, 666, 9xx area; 00 group; 0000 serial) and published sample numbers. Presidio's lemma
context cannot see words in the text with the no-op NLP engine, so this recognizer looks itself: a
match with ``SSN``/``social security`` shortly before it, or under an ``ssn``-named JSON key
(``{"ssn": "123456780"}``), is lifted to 0.85.
"""

from __future__ import annotations

import re

from presidio_analyzer import RecognizerResult
from presidio_analyzer.nlp_engine import NlpArtifacts
from presidio_analyzer.predefined_recognizers import UsSsnRecognizer as PresidioUsSsnRecognizer

from governance.redaction.recognizers.base import Prefiltered, boost_by_key_context

_KEY_WORDS = frozenset(
    {"ssn", "social_security_number", "socialsecuritynumber", "social", "tax_id", "taxid", "tin"}
)
_TEXT_BEFORE = re.compile(
    r"(?i)\b(?:ssn|ss#|social\s+security(?:\s+(?:number|no\.?|#))?)\W{0,6}(?:is\W{0,3})?$"
)


class UsSocialSecurityRecognizer(Prefiltered, PresidioUsSsnRecognizer):
    PREFILTER = re.compile(r"\d{3}[- .]?\d{2}[- .]?\d{4}")
    NEEDS_NUMBER_RUN = True
    KEY_CONTEXT_SCORE = 0.85

    def __init__(self, supported_language: str = "en") -> None:
        super().__init__(supported_language=supported_language, name=type(self).__name__)

    def analyze(
        self,
        text: str,
        entities: list[str] | None = None,
        nlp_artifacts: NlpArtifacts | None = None,
        regex_flags: int | None = None,
    ) -> list[RecognizerResult]:
        results = super().analyze(text, entities, nlp_artifacts, regex_flags)
        for r in results:
            if r.score < self.KEY_CONTEXT_SCORE and _TEXT_BEFORE.search(text, max(0, r.start - 40), r.start):
                r.score = self.KEY_CONTEXT_SCORE
        return results

    def invalidate_result(self, pattern_text: str) -> bool:
        digits = "".join(c for c in pattern_text if c.isdigit())
        return super().invalidate_result(pattern_text) or digits[0] == "9"

    def enhance_using_context(
        self,
        text: str,
        raw_recognizer_results: list[RecognizerResult],
        other_raw_recognizer_results: list[RecognizerResult],
        nlp_artifacts: NlpArtifacts | None,
        context: list[str] | None = None,
    ) -> list[RecognizerResult]:
        return boost_by_key_context(raw_recognizer_results, context, _KEY_WORDS, self.KEY_CONTEXT_SCORE)
