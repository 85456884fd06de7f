"""Passport numbers: after their name, under their key, or in a machine-readable zone whose check digits hold.

- after its name, in the languages covered (``passport``, ``passport no.``, ``passeport``, ``Reisepass``,
  ``pasaporte``, ``passaporte``, ``passaporto``, ``paszport``, ``paspoort``, ``旅券番号``, ``护照号码``,
  ``여권번호``; up to 30 characters between, no digit): a document number of 6-9 letters and digits with a
  digit in it (``L898902C3``, ``C01X00T47``, ``123456789``, ``AB 1234567``);
- under a key that names one (``passport_no``, ``passportNumber``): the whole value;
- in a machine-readable zone (ICAO 9303: TD3 passports, two lines of 44; TD2, two of 36; TD1 cards,
  three of 30): the line that carries the document number and the birth date counts when the 7-3-1 check
  digits of both hold, and is reported whole (it also holds the nationality, birth date, sex and expiry);
  the zone's name field (``ERIKSSON<<ANNA<MARIA``) is a ``PERSON`` (a name written the MRZ way elsewhere
  is ``machine_name_recognizer``'s).

The check digits are computed here (a dozen lines): the ``mrz`` package on PyPI checks whole zones, but
only zones already cut out of a document, and brings nothing else needed.
"""

from __future__ import annotations

import re
from typing import ClassVar

from presidio_analyzer import AnalysisExplanation, RecognizerResult
from presidio_analyzer.nlp_engine import NlpArtifacts

from governance.redaction.key_context import KIND_WORDS, key_words, normal_key
from governance.redaction.recognizers.base import SluiceLocalRecognizer, any_of

SCORE = 0.9
_NAMES = (
    r"(?i:passport|passeport|reisepass(?:nummer|[\- ]?nr)?|pasaporte|passaporte|passaporto|paszport[a-z]{0,3}|paspoort|"
    r"旅券(?:番号)?|护照(?:号码?)?|여권(?:번호)?)"
)
_AFTER_NAME = re.compile(
    _NAMES
    + r"[^\n\d]{0,30}?(?<![A-Za-z0-9])(?P<v>[A-Z]{1,2}[ \t]?\d{6,8}|(?=[A-Z]{0,3}\d)[A-Z0-9]{6,9})(?![A-Za-z0-9])"
)
_WHOLE = re.compile(r"\s*(?P<v>[A-Za-z0-9][A-Za-z0-9 \-]{4,13}[A-Za-z0-9])\s*")
NAME_WORDS = KIND_WORDS["PASSPORT_NUMBER"] | {"paszportu", "paszportem"}
# substrings one of the names holds, in the cases they are written in: a few C-level searches, no word scan
_HINTS = ("asspor", "ASSPOR", "assepor", "ASSEPOR", "asapor", "ASAPOR", "ssapor", "SSAPOR", "aszpor", "ASZPOR",
          "aspoor", "ASPOOR", "eisepass", "EISEPASS", "旅券", "护照", "여권")  # fmt: skip
_CJK_NAMES = ("旅券", "护照", "여권")
# a zone line on its own line, in a quoted string or a JSON list: exactly 30, 36 or 44 zone characters
_MRZ_LINE = re.compile(r"(?<![A-Z0-9<])(?P<v>[A-Z0-9<]{30}(?:[A-Z0-9<]{6}(?:[A-Z0-9<]{8})?)?)(?![A-Z0-9<])")
_NAME_LINE = re.compile(r"[PIACV][A-Z<][A-Z<]{3}[A-Z]")
_VALUES = {**{str(d): d for d in range(10)}, **{chr(65 + i): 10 + i for i in range(26)}, "<": 0}


def check_digit(field: str) -> str:
    """ICAO 9303 check digit of ``field``: weights 7, 3, 1 repeated, letters A=10 … Z=35, ``<`` = 0."""
    total = sum(_VALUES.get(c, 0) * (7, 3, 1)[i % 3] for i, c in enumerate(field))
    return str(total % 10)


def _holds(line: str, field: slice, check: int) -> bool:
    return line[check] == check_digit(line[field])


def mrz_data_line(line: str) -> bool:
    """A zone line with a document number and a birth date whose check digits hold."""
    if len(line) in (44, 36):  # TD3 / TD2 second line: number 0-9, check 9, birth 13-19, check 19
        return line[0] != "<" and _holds(line, slice(0, 9), 9) and _holds(line, slice(13, 19), 19)
    if len(line) == 30 and line[:1] in "AICV":  # TD1 first line: number 5-14, check 14
        return _holds(line, slice(5, 14), 14)
    if len(line) == 30:  # TD1 second line: birth 0-6, check 6, expiry 8-14, check 14
        return line[:6].isdigit() and _holds(line, slice(0, 6), 6) and _holds(line, slice(8, 14), 14)
    return False


def names_passport(context: list[str] | None) -> bool:
    """A key that names a passport (``passport_no``, ``travel_document_number``, ``旅券番号``)."""
    return any(
        not NAME_WORDS.isdisjoint(key_words(c))
        or normal_key(c) in NAME_WORDS
        or "traveldocument" in "".join(key_words(c))
        or any(n in c for n in _CJK_NAMES)
        for c in context or ()
    )


class PassportRecognizer(SluiceLocalRecognizer):
    ENTITY: ClassVar[str] = "PASSPORT_NUMBER"
    TRIGGER_PATTERNS = ("<<", any_of(_HINTS))

    VERSION: ClassVar[str] = "1"

    def __init__(self, supported_language: str = "en") -> None:
        super().__init__(supported_language, version=self.VERSION)

    def keyed(self, context: list[str]) -> bool:
        return names_passport(context)

    def may_match(self, text: str, context: list[str] | None = None) -> bool:
        return "<<" in text or names_passport(context) or any(h in text for h in _HINTS)

    def analyze(
        self, text: str, entities: list[str] | None = None, nlp_artifacts: NlpArtifacts | None = None
    ) -> list[RecognizerResult]:
        found = [self.result(*m.span("v"), SCORE, "after its name") for m in _AFTER_NAME.finditer(text)]
        if "<<" not in text and "<" not in text:
            return found
        names: list[tuple[int, int]] = []
        lines = list(_MRZ_LINE.finditer(text))
        zone = any(mrz_data_line(m["v"]) for m in lines)
        for m in lines:
            line, start = m["v"], m.start("v")
            if mrz_data_line(line):
                found.append(self.result(start, start + len(line), SCORE, "machine-readable zone"))
            elif "<<" in line and (zone or (len(line) in (44, 36) and _NAME_LINE.match(line))):
                # the zone's name line: after the type and country in TD3/TD2
                skip = 5 if len(line) in (44, 36) and line[0] in "PIACV" else 0
                name = line[skip:].rstrip("<")
                if name:
                    names.append((start + skip, start + skip + len(name)))
        return found + [self._person(s, e) for s, e in names]

    def _person(self, start: int, end: int) -> RecognizerResult:
        r = self.result(start, end, SCORE, "name in machine-readable form")
        r.entity_type = "PERSON"
        r.analysis_explanation = AnalysisExplanation(self.name, SCORE, "name in machine-readable form")
        return r

    def from_key(self, text: str, context: list[str] | None) -> RecognizerResult | None:
        """A document number under a key that names a passport (a digit in it)."""
        if not names_passport(context):
            return None
        m = _WHOLE.fullmatch(text)
        if m is None or not any(c.isdigit() for c in m["v"]):
            return None
        return self.result(*m.span("v"), SCORE, "under a passport key", by_key=True)
