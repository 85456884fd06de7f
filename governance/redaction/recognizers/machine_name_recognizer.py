"""PERSON in the forms machines write names in: ``SURNAME<<GIVEN<NAMES`` (a passport's machine-readable
zone, ICAO 9303) and ``SURNAME/GIVENNAMES MR`` (an airline booking's passenger name record).

Both are capitals without spaces, which no NER model or name-shape rule reads as a name. The MRZ form is
a name wherever it occurs (``<<`` between two runs of capitals has no other use); the PNR form needs a
title after it (``MR``, ``MS``, ``MRS``, ``MSTR``, ``MISS``, ``DR``) or a passenger key before it
(``pax1=``, ``passenger:``), and parts of three letters or more, so ``TCP/IP`` and ``LHR/NRT`` stay.
The zone's name line itself (``P<UTOERIKSSON<<ANNA<MARIA<<<``) is read by ``passport_recognizer``.
"""

from __future__ import annotations

import re

from presidio_analyzer import RecognizerResult
from presidio_analyzer.nlp_engine import NlpArtifacts

from governance.redaction.recognizers.base import SluiceLocalRecognizer

SCORE = 0.85
MRZ_NAME = re.compile(r"(?<![A-Z0-9<])(?P<v>[A-Z]{2,}(?:<[A-Z]+)*<<[A-Z]{2,}(?:<[A-Z]+)*)")
_PNR = re.compile(
    r"(?<![A-Za-z0-9/])(?P<v>[A-Z]{2,}/[A-Z]{3,})(?:[ \t]+(?P<t>MRS|MSTR|MISS|MR|MS|DR)\b)?(?![A-Za-z0-9/])"
)
_PAX_BEFORE = re.compile(r"(?i)(?:pax\d*|passenger|traveller|traveler|name)[ \t]*[=:][ \t]*[\"']?$")


class MachineNameRecognizer(SluiceLocalRecognizer):
    ENTITY = "PERSON"
    TRIGGER_PATTERNS = ("<<|/",)

    def may_match(self, text: str, context: list[str] | None = None) -> bool:
        return "<<" in text or "/" in text

    def analyze(
        self, text: str, entities: list[str] | None = None, nlp_artifacts: NlpArtifacts | None = None
    ) -> list[RecognizerResult]:
        found = []
        if "<<" in text:
            found += [self.result(*m.span("v"), SCORE, "MRZ name") for m in MRZ_NAME.finditer(text)]
        for m in _PNR.finditer(text):
            surname = m["v"].split("/")[0]
            if len(surname) < 2 or (surname.isupper() and len(m["v"]) < 7):
                continue
            if m["t"] or _PAX_BEFORE.search(text, max(0, m.start() - 16), m.start()):
                found.append(self.result(*m.span("v"), SCORE, "PNR name"))
        return found
