"""Phone numbers validated by libphonenumber: ``+CC`` international numbers and national formats.

Replaces Presidio's ``PhoneRecognizer`` (score 0.4, below the default threshold unless context words
are found, which the no-op NLP engine cannot find; recall ~0.7). Here a number that libphonenumber
calls *valid* scores 0.75 when it is written like a phone number (``+`` prefix, or grouped with spaces,
dashes, dots or parentheses); a bare digit run (``2125550143``) is too easily an id and needs a phone
word shortly before it in the text (``call``, ``phone``, ``tel`` …) or a phone-named JSON key.
National numbers outside North America must carry their trunk prefix (``020 7946 0958`` for GB), so
``1712345678`` (a timestamp) is not read as a GB number; a number glued into a longer token
(``ORD-2026-502799``) or shaped like a dotted quad (an IPv4 address) is not a phone number.
"""

from __future__ import annotations

import re
from typing import ClassVar

import phonenumbers
from presidio_analyzer import AnalysisExplanation, LocalRecognizer, RecognizerResult
from presidio_analyzer.nlp_engine import NlpArtifacts

from governance.redaction.recognizers.base import Prefiltered, boost_by_key_context

_NANP = frozenset({"US", "CA"})
_PHONE_WORDS = re.compile(
    r"(?i)\b(?:phone|tel|telephone|mobile|cell|call|fax|whatsapp|sms|text\s+me|dial|contact|reach\s+(?:me|us))\b"
)
_TRUNK_CANDIDATE = re.compile(r"(?<![\d+])\(?0\d")  # national numbers outside NANP start with 0
_DOTTED_QUAD = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")
_KEY_WORDS = frozenset({"phone", "tel", "telephone", "mobile", "cell", "fax", "msisdn", "whatsapp", "sms"})


def _inside_token(text: str, start: int, end: int) -> bool:
    """Part of a longer token (``ORD-2026-502799``, ``build_2125550143x``): an id, not a phone number."""
    before = text[max(0, start - 2) : start]
    after = text[end : end + 2]
    joined_before = bool(before) and (
        before[-1].isalnum() or (len(before) == 2 and before[-1] in "-_/." and before[0].isalnum())
    )
    joined_after = bool(after) and (
        after[0].isalnum()
        or after[0] == "_"
        or (len(after) == 2 and after[0] in "-_/" and after[1].isalnum())
    )
    return joined_before or joined_after


class PhoneNumberRecognizer(Prefiltered, LocalRecognizer):
    ENTITY: ClassVar[str] = "PHONE_NUMBER"
    SCORE: ClassVar[float] = 0.75
    BARE_SCORE: ClassVar[float] = 0.4
    PREFILTER = re.compile(r"\d[\d \t().\-/]{5,}\d")
    VERSION: ClassVar[str] = "1"

    def __init__(self, regions: list[str] | None = None, supported_language: str = "en") -> None:
        self.regions = list(regions or ["US"])
        super().__init__(
            supported_entities=[self.ENTITY],
            supported_language=supported_language,
            name=type(self).__name__,
            context=["phone", "telephone", "mobile", "cell", "call", "fax"],
            version=self.VERSION,
        )

    def load(self) -> None:
        pass

    def analyze(
        self, text: str, entities: list[str] | None = None, nlp_artifacts: NlpArtifacts | None = None
    ) -> list[RecognizerResult]:
        spans: dict[tuple[int, int], float] = {}
        for i, region in enumerate(self.regions):
            if i and region not in _NANP and not _TRUNK_CANDIDATE.search(text):
                continue  # +CC numbers were found by the first region's pass already
            for match in phonenumbers.PhoneNumberMatcher(text, region, leniency=phonenumbers.Leniency.VALID):
                raw = match.raw_string
                if _DOTTED_QUAD.fullmatch(raw.strip("[]() ")) or _inside_token(text, match.start, match.end):
                    continue
                international = raw.startswith("+") or raw.startswith("00")
                if not international and region not in _NANP and not raw.lstrip("(").startswith("0"):
                    continue
                span = (match.start, match.end)
                if span in spans:
                    continue
                formatted = international or any(c in raw for c in " -.()/")
                if formatted or _PHONE_WORDS.search(text, max(0, match.start - 40), match.start):
                    spans[span] = self.SCORE
                else:
                    spans[span] = self.BARE_SCORE
        return [self._result(s, e, score) for (s, e), score in spans.items()]

    def _result(self, start: int, end: int, score: float) -> RecognizerResult:
        return RecognizerResult(
            entity_type=self.ENTITY,
            start=start,
            end=end,
            score=score,
            analysis_explanation=AnalysisExplanation(recognizer=self.name, original_score=score),
            recognition_metadata={
                RecognizerResult.RECOGNIZER_NAME_KEY: self.name,
                RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: self.id,
            },
        )

    def enhance_using_context(
        self,
        text: str,
        raw_recognizer_results: list[RecognizerResult],
        other_raw_recognizer_results: list[RecognizerResult],
        nlp_artifacts: NlpArtifacts | None,
        context: list[str] | None = None,
    ) -> list[RecognizerResult]:
        """A bare number under a phone-named JSON key (``{"mobile": "2125550143"}``) is a phone number."""
        return boost_by_key_context(raw_recognizer_results, context, _KEY_WORDS, self.SCORE)
