"""IBANs: Presidio's recognizer (country formats and the mod-97 checksum) behind a cheap prefilter.

The prefilter wants the country code in capitals, as IBANs are printed. An all-lower-case IBAN
(``de89 3704 …``) is looked for only where it is named: the word "iban" in the text, or a JSON key
that names a bank account (``{"iban": "de89…"}``); it must pass the same checksum, read in capitals (a
case-insensitive prefilter on every text would cost twice as much).
"""

from __future__ import annotations

import re

from presidio_analyzer import RecognizerResult
from presidio_analyzer.predefined_recognizers import IbanRecognizer

from governance.redaction.key_context import names_kind
from governance.redaction.recognizers.base import RefinedPresidio, any_of, lowered

_LOWER_CANDIDATE = re.compile(
    r"(?<![\w-])[a-z]{2}\d{2}(?:[ -]?[a-z0-9]{4}){2,7}(?:[ -]?[a-z0-9]{1,3})?(?![\w-])"
)
_SEPARATORS = re.compile(r"[ -]")


def _mentions_iban(text: str) -> bool:
    return "iban" in text or "IBAN" in text or "Iban" in text


class IbanCodeRecognizer(RefinedPresidio, IbanRecognizer):
    ENTITY = "IBAN_CODE"
    PREFILTER = re.compile(r"[A-Z]{2}\d{2}[ -]?[A-Za-z0-9]{4}")
    TRIGGER_PATTERNS = (PREFILTER.pattern, any_of(("iban", "IBAN", "Iban")))

    def keyed(self, context: list[str]) -> bool:
        return self._names_iban(context)

    def may_match(self, text: str, context: list[str] | None = None) -> bool:
        if self.PREFILTER.search(text) is not None:  # Prefiltered's test, without the call
            return True
        return _mentions_iban(text) or (context is not None and self._names_iban(context))

    def _names_iban(self, context: list[str] | None) -> bool:
        return bool(context) and any(self.ENTITY in names_kind(c) for c in context or ())

    def _valid_lower(self, candidate: str) -> bool:
        return any(c.islower() for c in candidate) and bool(
            self.validate_result(_SEPARATORS.sub("", candidate).upper())
        )

    def scan(self, text: str, *presidio_args: object) -> list[RecognizerResult]:
        """Presidio's findings where a capital IBAN may be, and lower-case ones where "IBAN" is written."""
        found = super().scan(text, *presidio_args) if self.PREFILTER.search(text) else []
        if _mentions_iban(text):
            found += [
                self.result(*m.span(), 1.0, "lower-case IBAN named as such")
                for m in _LOWER_CANDIDATE.finditer(lowered(text))
                if self._valid_lower(text[m.start() : m.end()])
            ]
        return found

    def from_key(self, text: str, context: list[str] | None) -> RecognizerResult | None:
        """A whole value under an IBAN-named key, in any case, when it passes the checksum."""
        if not self._names_iban(context):
            return None
        stripped = text.strip()
        if not (_LOWER_CANDIDATE.fullmatch(stripped.lower()) and self._valid_lower(stripped)):
            return None
        start = len(text) - len(text.lstrip())
        return self.result(start, start + len(stripped), 1.0, "lower-case IBAN under its key", by_key=True)
