"""IBANs: Presidio's recognizer (country formats and the mod-97 checksum) behind a cheap prefilter.

The prefilter wants the country code in capitals, as IBANs are printed. An all-lower-case IBAN
(``de89 3704 …``) is looked for only where it is named: the word "iban" in the text, or a JSON key
that names a bank account (``{"iban": "de89…"}``); it must pass the same checksum, read in capitals (a
case-insensitive prefilter on every text would cost twice as much).
"""

from __future__ import annotations

import re

from presidio_analyzer import AnalysisExplanation, RecognizerResult
from presidio_analyzer.nlp_engine import NlpArtifacts
from presidio_analyzer.predefined_recognizers import IbanRecognizer

from governance.redaction.key_context import names_kind
from governance.redaction.recognizers.base import Prefiltered

ENTITY = "IBAN_CODE"
_LOWER_CANDIDATE = re.compile(
    r"(?<![\w-])[a-z]{2}\d{2}(?:[ -]?[a-z0-9]{4}){2,7}(?:[ -]?[a-z0-9]{1,3})?(?![\w-])"
)
_SEPARATORS = re.compile(r"[ -]")


def _mentions_iban(text: str) -> bool:
    return "iban" in text or "IBAN" in text or "Iban" in text


def _names_iban(context: list[str] | None) -> bool:
    return bool(context) and any(ENTITY in names_kind(c) for c in context or ())


class IbanCodeRecognizer(Prefiltered, IbanRecognizer):
    PREFILTER = re.compile(r"[A-Z]{2}\d{2}[ -]?[A-Za-z0-9]{4}")

    def __init__(self, supported_language: str = "en") -> None:
        super().__init__(supported_language=supported_language, name=type(self).__name__)

    def may_match(self, text: str, context: list[str] | None = None) -> bool:
        if self.PREFILTER.search(text) is not None:  # Prefiltered's test, without the call
            return True
        return (
            "iban" in text
            or "IBAN" in text
            or "Iban" in text
            or (context is not None and _names_iban(context))
        )

    def _valid_lower(self, candidate: str) -> bool:
        return any(c.islower() for c in candidate) and bool(
            self.validate_result(_SEPARATORS.sub("", candidate).upper())
        )

    def _result(self, start: int, end: int, how: str) -> RecognizerResult:
        return RecognizerResult(
            ENTITY, start, end, 1.0,
            AnalysisExplanation(recognizer=self.name, original_score=1.0, pattern_name=how),
            {RecognizerResult.RECOGNIZER_NAME_KEY: self.name, RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: self.id},
        )  # fmt: skip

    def analyze(
        self,
        text: str,
        entities: list[str],
        nlp_artifacts: NlpArtifacts | None = None,
        regex_flags: int | None = None,
    ) -> list[RecognizerResult]:
        found = (
            super().analyze(text, entities, nlp_artifacts, regex_flags) if self.PREFILTER.search(text) else []
        )
        if _mentions_iban(text):
            found += [
                self._result(*m.span(), "lower-case IBAN named as such")
                for m in _LOWER_CANDIDATE.finditer(text.lower())
                if self._valid_lower(text[m.start() : m.end()])
            ]
        return found

    def enhance_using_context(
        self,
        text: str,
        raw_recognizer_results: list[RecognizerResult],
        other_raw_recognizer_results: list[RecognizerResult],
        nlp_artifacts: NlpArtifacts | None,
        context: list[str] | None = None,
    ) -> list[RecognizerResult]:
        """A whole value under an IBAN-named key, in any case, when it passes the checksum."""
        if not raw_recognizer_results and _names_iban(context):
            stripped = text.strip()
            if _LOWER_CANDIDATE.fullmatch(stripped.lower()) and self._valid_lower(stripped):
                start = len(text) - len(text.lstrip())
                return [self._result(start, start + len(stripped), "lower-case IBAN under its key")]
        return super().enhance_using_context(
            text, raw_recognizer_results, other_raw_recognizer_results, nlp_artifacts, context
        )
