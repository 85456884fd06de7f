"""IPv4 and IPv6 addresses: Presidio's recognizer, minus version numbers, behind a cheap prefilter.

``v1.2.3.4`` / ``version 10.0.0.1`` / ``build 2.1.0.3`` are version strings, not hosts: a dotted quad
right after such a word is dropped. Presidio validates the rest with ``ipaddress``.
"""

from __future__ import annotations

import re

from presidio_analyzer import RecognizerResult
from presidio_analyzer.nlp_engine import NlpArtifacts
from presidio_analyzer.predefined_recognizers import IpRecognizer

from governance.redaction.recognizers.base import Prefiltered, has_number_run

_VERSION_BEFORE = re.compile(r"(?i)(?:\bv|\bversion\s*|\bbuild\s*|\brelease\s*|\bver\.?\s*)$")


class IpAddressRecognizer(Prefiltered, IpRecognizer):
    PREFILTER = re.compile(r"\d\.\d{1,3}\.\d{1,3}\.\d")  # dotted quad
    PREFILTER_V6 = re.compile(r"::|:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:")  # ::, or three colon groups

    def may_match(self, text: str, context: list[str] | None = None) -> bool:
        return (has_number_run(text) and self.PREFILTER.search(text) is not None) or (
            ":" in text and self.PREFILTER_V6.search(text) is not None
        )

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
        return [
            r
            for r in results
            if not _VERSION_BEFORE.search(text, max(0, r.start - 10), r.start)
            and not _in_dotted_run(text, r.start, r.end)
        ]


def _in_dotted_run(text: str, start: int, end: int) -> bool:
    """Part of a longer dotted number (an OID ``1.3.6.1.4.1.9``, a version ``10.0.19041.1``): not an address."""
    return (start >= 2 and text[start - 1] == "." and text[start - 2].isdigit()) or (
        end + 1 < len(text) and text[end] == "." and text[end + 1].isdigit()
    )
