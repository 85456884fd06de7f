"""IPv4 and IPv6 addresses: Presidio's recognizer, minus version numbers, behind a cheap prefilter.

``v1.2.3.4`` / ``version 10.0.0.1`` / ``build 2.1.0.3`` are version strings, not hosts: a dotted quad
right after such a word is dropped. Presidio validates the rest with ``ipaddress``. Addresses that are
the same on every machine (``127.0.0.1`` and ``::1``, ``0.0.0.0`` and ``::``, ``255.255.255.255``) name
no host or person and are kept: ``0.0.0.0:8080->80/tcp``, ``NO_PROXY=127.0.0.1``. Other addresses of the
loopback range (``127.43.8.2``) are rare enough in text to be anything, and are redacted.
"""

from __future__ import annotations

import ipaddress
import re

from presidio_analyzer import RecognizerResult
from presidio_analyzer.predefined_recognizers import IpRecognizer

from governance.redaction.recognizers.base import RefinedPresidio, has_number_run

_VERSION_BEFORE = re.compile(r"(?i)(?:\bv|\bversion\s*|\bbuild\s*|\brelease\s*|\bver\.?\s*)$")


class IpAddressRecognizer(RefinedPresidio, IpRecognizer):
    PREFILTER = re.compile(r"\d\.\d{1,3}\.\d{1,3}\.\d")  # dotted quad
    PREFILTER_V6 = re.compile(r"::|:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:")  # ::, or three colon groups
    TRIGGER_PATTERNS = (PREFILTER.pattern, PREFILTER_V6.pattern)

    def may_match(self, text: str, context: list[str] | None = None) -> bool:
        return (has_number_run(text) and self.PREFILTER.search(text) is not None) or (
            ":" in text and self.PREFILTER_V6.search(text) is not None
        )

    def refine(self, text: str, results: list[RecognizerResult]) -> list[RecognizerResult]:
        return [
            r
            for r in results
            if not _VERSION_BEFORE.search(text, max(0, r.start - 10), r.start)
            and not _in_dotted_run(text, r.start, r.end)
            and not nobodys_address(text[r.start : r.end])
        ]


SAME_ON_EVERY_MACHINE = frozenset(
    ipaddress.ip_address(a)
    for a in ("127.0.0.1", "0.0.0.0", "255.255.255.255", "::1", "::")  # noqa: S104
)


def nobodys_address(value: str) -> bool:
    """The loopback, unspecified or limited broadcast address, as written on every machine."""
    try:
        return ipaddress.ip_address(value.strip("[]")) in SAME_ON_EVERY_MACHINE
    except ValueError:
        return False


def _in_dotted_run(text: str, start: int, end: int) -> bool:
    """Part of a longer dotted number (an OID ``1.3.6.1.4.1.9``, a version ``10.0.19041.1``): not an address."""
    return (start >= 2 and text[start - 1] == "." and text[start - 2].isdigit()) or (
        end + 1 < len(text) and text[end] == "." and text[end + 1].isdigit()
    )
