"""Email addresses: Presidio's recognizer with the public-suffix check made offline.

Presidio validates the domain with ``tldextract.extract``, which downloads the public suffix list on
first use and writes it under ``~/.cache``. Here one ``TLDExtract`` uses the snapshot bundled with the
package (no network, no cache directory). An SCP-style git remote (``git@github.com:org/repo.git``:
the address is followed by ``:`` and a path) is a host login, not an email address.
"""

from __future__ import annotations

import re

import tldextract
from presidio_analyzer import RecognizerResult
from presidio_analyzer.predefined_recognizers import EmailRecognizer

from governance.redaction.recognizers.base import RefinedPresidio

_SCP_PATH = re.compile(r":[A-Za-z0-9_~./-]")
_OFFLINE_EXTRACT = tldextract.TLDExtract(cache_dir=None, suffix_list_urls=(), fallback_to_snapshot=True)


class EmailAddressRecognizer(RefinedPresidio, EmailRecognizer):
    TRIGGERS = ("@",)
    PREFILTER = re.compile(r"\w@\w")

    def validate_result(self, pattern_text: str) -> bool:
        return _OFFLINE_EXTRACT(pattern_text).fqdn != ""

    def refine(self, text: str, results: list[RecognizerResult]) -> list[RecognizerResult]:
        return [r for r in results if not _SCP_PATH.match(text, r.end)]
