"""US Social Security numbers: Presidio's recognizer plus JSON-key context, behind a cheap prefilter.

Presidio scores ``078-05-1120``-shaped numbers 0.5 and bare nine digits 0.05, and rejects never-issued
ranges (000, 666, 9xx area; 00 group; 0000 serial) and published sample numbers. Presidio's lemma
context cannot see words in the text with the no-op NLP engine, so this recognizer looks itself: a
match with ``SSN``/``social security`` shortly before it, or under an ``ssn``-named JSON key
(``{"ssn": "123456780"}``), is lifted to 0.85. In such a context a ``ddd-dd-dddd`` or a bare nine-digit
run is an SSN even where Presidio rejects the number: the writer said it is one.
"""

from __future__ import annotations

import re

from presidio_analyzer import RecognizerResult
from presidio_analyzer.predefined_recognizers import UsSsnRecognizer as PresidioUsSsnRecognizer

from governance.redaction.recognizers.base import RefinedPresidio, context_words

_KEY_WORDS = frozenset(
    {"ssn", "social_security_number", "socialsecuritynumber", "social", "tax_id", "taxid", "tin", "taxpayer"}
)
# the name, then a few of the words that lead to the number ("SSN on file is", "social security number:")
_TEXT_BEFORE = re.compile(
    r"(?i)(?:\b(?:ssn|social\s+security)\b|\bss#)[^\w\n]{0,6}"
    r"(?:(?:numbers?|no|nr|on|file|is|was|reads|of|the|applicant|holder|us)\b[^\w\n]{0,4}){0,5}$"
)


# or the name right after it: "is 141333661 the SSN we have on file?"
_TEXT_AFTER = re.compile(
    r"(?i)[^\w\n]{0,3}(?:is|was)[ \t]+(?:(?:the|my|his|her|our|your|their)[ \t]+)?(?:ssn|social\s+security)\b"
)
_GROUPED = re.compile(r"(?<![\d-])\d{3}([- ]?)\d{2}\1\d{4}(?![\d-])")
_WHOLE = re.compile(r"\s*\d{3}([- ]?)\d{2}\1\d{4}\s*")


class UsSocialSecurityRecognizer(RefinedPresidio, PresidioUsSsnRecognizer):
    ENTITY = "US_SSN"
    PREFILTER = re.compile(r"\d{3}[- .]?\d{2}[- .]?\d{4}")
    NEEDS_NUMBER_RUN = True
    KEY_CONTEXT = _KEY_WORDS
    KEY_CONTEXT_SCORE = 0.85

    def refine(self, text: str, results: list[RecognizerResult]) -> list[RecognizerResult]:
        for r in results:
            if r.score < self.KEY_CONTEXT_SCORE and (
                _TEXT_BEFORE.search(text, max(0, r.start - 40), r.start) or _TEXT_AFTER.match(text, r.end)
            ):
                r.score = self.KEY_CONTEXT_SCORE
        # what the writer calls an SSN is one, even a number Presidio rejects (a published sample such as
        # 123-45-6789, a never-issued range, an ITIN's 9xx area): the value leaks all the same
        taken = [(r.start, r.end) for r in results]
        for m in _GROUPED.finditer(text):
            if any(s < m.end() and m.start() < e for s, e in taken):
                continue
            if _TEXT_BEFORE.search(text, max(0, m.start() - 40), m.start()) or _TEXT_AFTER.match(
                text, m.end()
            ):
                results.append(self.result(m.start(), m.end(), self.KEY_CONTEXT_SCORE, "ssn after its name"))
        return results

    def from_key(self, text: str, context: list[str] | None) -> RecognizerResult | None:
        """A whole SSN-shaped value under an SSN-named key (``{"ssn": "123-45-6789"}``), whatever its range."""
        if not context or context_words(context).isdisjoint(_KEY_WORDS) or not _WHOLE.fullmatch(text):
            return None
        start = len(text) - len(text.lstrip())
        return self.result(
            start, len(text.rstrip()), self.KEY_CONTEXT_SCORE, "ssn under its key", by_key=True
        )

    def invalidate_result(self, pattern_text: str) -> bool:
        digits = "".join(c for c in pattern_text if c.isdigit())
        return super().invalidate_result(pattern_text) or digits[0] == "9"
