"""Email addresses: Presidio's recognizer with the public-suffix check made offline.

Presidio validates the domain with ``tldextract.extract``, which downloads the public suffix list on
first use and writes it under ``~/.cache``. Here one ``TLDExtract`` uses the snapshot bundled with the
package (no network, no cache directory). A domain under a private-use or reserved top-level name
(``alice@mail.corp.internal``, ``ops@acme.local``, ``bob@test.example``), which no public suffix list
holds, is an address too: company-internal mail is the common case in agent traffic. An address whose
``@`` is percent-encoded in a URL (``?email=jane.doe%40example.com``) is found as well, and one written
to dodge scrapers with a bracketed "at" (``john [at] example [dot] com``, ``john(at)example.org``). An SCP-style git
remote (``git@github.com:org/repo.git``: the address is followed by ``:`` and a path) is a host login,
not an email address.
"""

from __future__ import annotations

import re

import tldextract
from presidio_analyzer import RecognizerResult
from presidio_analyzer.predefined_recognizers import EmailRecognizer

from governance.redaction.recognizers.base import RefinedPresidio

_SCP_PATH = re.compile(r":[A-Za-z0-9_~./-]")
_OFFLINE_EXTRACT = tldextract.TLDExtract(cache_dir=None, suffix_list_urls=(), fallback_to_snapshot=True)
# RFC 6762 (local), RFC 2606/6761 (example, test, invalid, localhost), ICANN's "internal", and the
# names intranets use without registering them.
PRIVATE_TLDS = frozenset(
    {"internal", "local", "localdomain", "lan", "corp", "home", "intranet", "intra", "private", "example", "test",
     "invalid", "localhost"}
)  # fmt: skip
_PERCENT_ENCODED = re.compile(
    r"(?<![\w.%+\-])(?:[A-Za-z0-9._\-]|%2[Bb])+%40(?P<domain>[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+)(?![\w\-]|%40)"
)


# "john [at] example [dot] com", "jane (at) acme.io", "ops{at}corp{dot}internal": bracketed words only
# (a bare "at" / "dot" is ordinary prose).
_AT = r"[ \t]*(?:\[[ \t]*at[ \t]*\]|\([ \t]*at[ \t]*\)|\{[ \t]*at[ \t]*\})[ \t]*"
_DOT = r"(?:[ \t]*(?:\[[ \t]*dot[ \t]*\]|\([ \t]*dot[ \t]*\)|\{[ \t]*dot[ \t]*\})[ \t]*|\.)"
_OBFUSCATED = re.compile(
    r"(?i)(?<![\w.+\-])[\w.+\-]{1,64}"
    + _AT
    + r"(?P<domain>[a-z0-9\-]{1,63}(?:"
    + _DOT
    + r"[a-z0-9\-]{1,63}){1,4})\b"
)
_DOT_WORD = re.compile(_DOT, re.IGNORECASE)
_WRITTEN_AT = r"(?i:[\[({][ \t]*at[ \t]*[\])}])"
_WRITTEN_AT_RX = re.compile(_WRITTEN_AT)


def domain_is_valid(address: str) -> bool:
    """Whether the text after the ``@`` ends in a public suffix or a private-use top-level name."""
    if _OFFLINE_EXTRACT(address).fqdn != "":
        return True
    return address.rsplit(".", 1)[-1].lower() in PRIVATE_TLDS


class EmailAddressRecognizer(RefinedPresidio, EmailRecognizer):
    ENTITY = "EMAIL_ADDRESS"
    _AT_SIGN = re.compile(r"\w@\w")
    TRIGGER_PATTERNS = (r"\w@\w", "%40", r"(?:at|AT) ?[\])}]")

    def may_match(self, text: str, context: list[str] | None = None) -> bool:
        """An ``@`` between word characters, a ``%40``, or a bracketed "at" (each test only where the one
        before it failed: most texts have none of them)."""
        if "@" in text and self._AT_SIGN.search(text) is not None:
            return True
        if "%40" in text:
            return True
        return (
            "at]" in text or "at)" in text or "at}" in text or "at ]" in text or "at )" in text
            or "AT]" in text or "AT)" in text or "AT}" in text
        ) and _WRITTEN_AT_RX.search(text) is not None  # fmt: skip

    def validate_result(self, pattern_text: str) -> bool:
        return domain_is_valid(pattern_text)

    def scan(self, text: str, *presidio_args: object) -> list[RecognizerResult]:
        found = super().scan(text, *presidio_args) if "@" in text else []
        if "%40" in text:
            found += [
                self.result(*m.span(), 1.0, "percent-encoded address")
                for m in _PERCENT_ENCODED.finditer(text)
                if domain_is_valid(m["domain"])
            ]
        if _WRITTEN_AT_RX.search(text) is not None:
            found += [
                self.result(*m.span(), 0.9, "address with a written-out at")
                for m in _OBFUSCATED.finditer(text)
                if domain_is_valid(_DOT_WORD.sub(".", m["domain"]))
            ]
        return found

    def refine(self, text: str, results: list[RecognizerResult]) -> list[RecognizerResult]:
        return [r for r in results if not _SCP_PATH.match(text, r.end)]
