"""Credentials named as such: a value under a secret-named JSON key, or after ``password=`` in text.

JSON walking passes each value's key as context, so ``{"password": "hunter2"}`` or
``{"client_secret": "…"}`` redacts the whole value whatever it looks like. The key must *name* a
secret (``password``, ``db_password``, ``client_secret``, ``api_key``, ``access_token`` …);
``token_count`` or ``max_tokens`` do not. Names also used for non-secrets (``token``, ``secret``,
``pass``: logprobs carry ``{"token": "Hello"}``) need a value that looks like a token.

Key names are classified once, in ``key_context`` (any key style, a sibling's name included).
A session cookie on a ``Cookie:`` / ``Set-Cookie:`` line (16+ characters) is a credential too.
In free text, ``password: hunter2``, ``the password is hunter2!``, ``password for sudo: …`` and ``api_key="…"`` are caught when
the value looks like a literal (has a digit or a symbol) rather than code (``password =
get_password()``, ``api_key=settings.API_KEY``, type hints like ``password: str``).
"""

from __future__ import annotations

import re

from presidio_analyzer import Pattern, RecognizerResult

from governance.redaction.key_context import code_or_placeholder, names_secret
from governance.redaction.recognizers.base import SluicePatternRecognizer

_NOT_SECRETS = frozenset({"", "null", "none", "true", "false", "undefined", "redacted", "***", "<redacted>"})
_TEXT_NAMES = (
    r"(?:password|passwd|pwd|passphrase|client_secret|secret_key|api_key|apikey|access_token|auth_token)"
)


COOKIE_PATTERN = "cookie value on a cookie header line"
_COOKIE_LINE = re.compile(r"""(?i)[ \t"'>*-]*(?:request\s+headers?:\s*)?(?:set-)?cookie:""")


def names_a_secret(key: str) -> bool:
    """``clientSecret``, ``DB_PASSWORD``, ``x-api-key`` -> True; ``token_count``, ``max_tokens`` -> False."""
    return names_secret(key) == "strong"


def names_maybe_a_secret(key: str) -> bool:
    """``token``/``HF_TOKEN``/``key``: a secret only if the value looks like one."""
    return names_secret(key) == "weak"


def looks_like_token(value: str) -> bool:
    """One run of 8+ characters with a digit or a symbol, no blanks (``Hello`` is not a token)."""
    return len(value) >= 8 and not any(c.isspace() for c in value) and looks_like_literal(value)


def looks_like_literal(value: str) -> bool:
    """A literal secret rather than code: has a digit or a symbol, and is not a template/placeholder."""
    if value[0] in "$<{%" or value.lower() in _NOT_SECRETS:
        return False
    return any(c.isdigit() for c in value) or any(not c.isalnum() and c not in "._" for c in value)


class CredentialRecognizer(SluicePatternRecognizer):
    ENTITY = "CREDENTIAL"
    PATTERNS = [
        Pattern(
            "secret assignment in text",
            # "password for sudo: …", "the password of the vault is …": up to two short qualifiers
            r"(?i:(?<![A-Za-z0-9_])"
            + _TEXT_NAMES
            + r"(?:[ \t]+(?:for|of|to|on|at)[ \t]+[\w.@\-]{1,40}){0,2})"
            r"[\"']?(?:\s*[:=]\s*|\s+(?:is\s+)?)(?P<q>[\"']?)"
            r"(?P<v>[^\s\"'<>()\[\]{},;]{6,200})(?P=q)(?![^\s\"',;)\]}])",
            0.85,
        ),
        Pattern(
            COOKIE_PATTERN,
            r"(?i:(?:\bcookie:|;))[ \t]*[\w.\-]{1,64}=(?P<v>[^;\s\"']{16,4096})",
            0.85,
        ),
    ]
    LOWER_TRIGGERS = ("pass", "pwd", "secret", "api_key", "apikey", "_token", "cookie")

    def validate_result(self, pattern_text: str) -> bool:
        return looks_like_literal(pattern_text)

    def refine(self, text: str, results: list[RecognizerResult]) -> list[RecognizerResult]:
        """A cookie's value counts only on a ``Cookie:`` / ``Set-Cookie:`` line."""
        kept = []
        for r in results:
            if r.analysis_explanation and r.analysis_explanation.pattern_name == COOKIE_PATTERN:
                line_start = text.rfind("\n", 0, r.start) + 1
                if _COOKIE_LINE.match(text, line_start) is None:
                    continue
            kept.append(r)
        return kept

    def may_match(self, text: str, context: list[str] | None = None) -> bool:
        if self._names_secret(context) or (context and any(names_maybe_a_secret(c) for c in context)):
            return True
        low = text.lower()
        return any(t in low for t in self.LOWER_TRIGGERS)

    @staticmethod
    def _names_secret(context: list[str] | None) -> bool:
        return bool(context) and any(names_a_secret(c) for c in context or ())

    def from_key(self, text: str, context: list[str] | None) -> RecognizerResult | None:
        """A whole value under a secret-named key is a credential, whatever it looks like."""
        stripped = text.strip()
        if stripped.lower() in _NOT_SECRETS or len(stripped) > 4096 or code_or_placeholder(stripped):
            return None
        named = self._names_secret(context)
        if not named and not (
            context and any(names_maybe_a_secret(c) for c in context) and looks_like_token(stripped)
        ):
            return None
        start = len(text) - len(text.lstrip())
        return self.result(start, start + len(stripped), 0.95, "value under secret-named key", by_key=True)
