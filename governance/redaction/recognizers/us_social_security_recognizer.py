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
from presidio_analyzer.predefined_recognizers import UsSsnRecognizer as PresidioUsSsnRecognizer

from governance.redaction.recognizers.base import RefinedPresidio

_KEY_WORDS = frozenset(
    {"ssn", "social_security_number", "socialsecuritynumber", "social", "tax_id", "taxid", "tin"}
)
_TEXT_BEFORE = re.compile(
    r"(?i)\b(?:ssn|ss#|social\s+security(?:\s+(?:number|no\.?|#))?)\W{0,6}(?:is\W{0,3})?$"
)


class UsSocialSecurityRecognizer(RefinedPresidio, PresidioUsSsnRecognizer):
    PREFILTER = re.compile(r"\d{3}[- .]?\d{2}[- .]?\d{4}")
    NEEDS_NUMBER_RUN = True
    KEY_CONTEXT = _KEY_WORDS
    KEY_CONTEXT_SCORE = 0.85

    def refine(self, text: str, results: list[RecognizerResult]) -> list[RecognizerResult]:
        for r in results:
            if r.score < self.KEY_CONTEXT_SCORE and _TEXT_BEFORE.search(text, max(0, r.start - 40), r.start):
                r.score = self.KEY_CONTEXT_SCORE
        return results

    def invalidate_result(self, pattern_text: str) -> bool:
        digits = "".join(c for c in pattern_text if c.isdigit())
        return super().invalidate_result(pattern_text) or digits[0] == "9"
