"""Credentials named as such: a value under a secret-named JSON key, or after ``password=`` in text.

JSON walking passes each value's key as context, so ``{"password": "hunter2"}`` or
``{"client_secret": "…"}`` redacts the whole value whatever it looks like. The key must *name* a
secret (``password``, ``db_password``, ``client_secret``, ``api_key``, ``access_token`` …);
``token_count`` or ``max_tokens`` do not. Names also used for non-secrets (``token``, ``secret``,
``pass``: logprobs carry ``{"token": "Hello"}``) need a value that looks like a token.

Key names are classified once, in ``key_context`` (any key style, a sibling's name included).
A session cookie on a ``Cookie:`` / ``Set-Cookie:`` line (16+ characters) is a credential too, and so
are the value paired with a quoted secret name (``os.getenv("DB_PASS", "Fallb4ck!")``, a header pair
``("X-Api-Key", "3f9a…")``, ``process.env.DB_PASS || "…"``) and the password of a ``.pgpass`` line.
In free text, ``password: hunter2``, ``the password is hunter2!``, ``password for sudo: …`` and ``api_key="…"`` are caught when
the value looks like a literal (has a digit or a symbol) rather than code (``password =
get_password()``, ``api_key=settings.API_KEY``, type hints like ``password: str``).
"""

from __future__ import annotations

import re

from presidio_analyzer import Pattern, RecognizerResult

from governance.redaction.key_context import (
    NOT_SECRETS,
    code_or_placeholder,
    looks_like_literal,
    looks_like_token,
    names_a_secret,
    names_maybe_a_secret,
    names_secret,
)
from governance.redaction.recognizers.base import SluicePatternRecognizer

_TEXT_NAMES = (
    r"(?:password|passwd|pwd|passphrase|client_secret|secret_key|api_key|apikey|access_token|auth_token)"
)


COOKIE_PATTERN = "cookie value on a cookie header line"
_COOKIE_LINE = re.compile(r"""(?i)[ \t"'>*-]*(?:request\s+headers?:\s*)?(?:set-)?cookie:""")
# ("DB_PASS", "Fallb4ck!"), ["X-Api-Key", "3f9a…"]: a quoted name, then its quoted value (a lookup's
# default, a header pair); and JavaScript's process.env.DB_PASS || "…" / ?? "…".
_QUOTED_PAIR = re.compile(
    r"""(?P<kq>["'])(?P<k>[A-Za-z_][\w.\-]{0,63})(?P=kq),[ \t]*(?P<q>["'`])(?P<v>[^"'`\s]{8,512})(?P=q)"""
)
_ENV_DEFAULT = re.compile(
    r"""\benv\.(?P<k>[A-Za-z_]\w{0,63})[ \t]*(?:\|\||\?\?)[ \t]*(?P<q>["'`])(?P<v>[^"'`\s]{8,512})(?P=q)"""
)
# A PostgreSQL password file line, host:port:database:user:password (a host with a letter or a dot,
# a user with a letter: clock times and addresses are not such lines).
_PGPASS_LINE = re.compile(
    r"(?<![\w.:/\-])(?=[\w.\-*]*[A-Za-z.*])[\w.\-*]+:(?:\d{1,5}|\*):[\w.\-*$]+:"
    r"(?=[\w.\-*$@]*[A-Za-z*])[\w.\-*$@]+:(?P<v>[^\s:]{4,200})(?=\s|$)",
    re.MULTILINE,
)
_PGPASS_HINT = re.compile(r":(?:\d{1,5}|\*):[^\s:]+:[^\s:]+:[^\s:]")
# Some word of a secret's name: what a quoted name before a comma, or a name after "env.", must hold
# before the pair patterns run (code holds many "', " that pair nothing).
_NAME_PARTS = ("pass", "pwd", "secret", "key", "token", "auth", "cred")


def _may_pair(text: str) -> bool:
    """Whether a quoted name that holds a secret's word ends right before a comma (``"DB_PASS",``), or a
    ``process.env.NAME`` names one: a few ``find`` calls, no regex over the whole text."""
    for q in ("'", '"'):
        end = text.find(q + ",")
        while end != -1:
            start = text.rfind(q, max(0, end - 65), end)
            if start != -1 and any(p in text[start + 1 : end].lower() for p in _NAME_PARTS):
                return True
            end = text.find(q + ",", end + 2)
    at = text.find("env.")
    while at != -1:
        if any(p in text[at + 4 : at + 68].lower() for p in _NAME_PARTS):
            return True
        at = text.find("env.", at + 4)
    return False


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

    @staticmethod
    def _has_trigger(low: str) -> bool:
        """Whether lower-cased ``low`` holds a word every text pattern above needs (written out: twice as fast
        as ``any`` over a tuple)."""
        return (
            "pass" in low or "pwd" in low or "secret" in low or "api_key" in low or "apikey" in low
            or "_token" in low or "cookie" in low
        )  # fmt: skip

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

    def scan(self, text: str, *presidio_args: object) -> list[RecognizerResult]:
        """The patterns above, then the shapes where a name and its value are written apart: a quoted
        pair or a JS env default (the name must name a secret, the value look like a token) and a
        password-file line."""
        low = text.lower()
        found = super().scan(text, *presidio_args) if self._has_trigger(low) else []
        if _may_pair(text):
            for rx in (_QUOTED_PAIR, _ENV_DEFAULT):
                for m in rx.finditer(text):
                    if names_secret(m["k"]) and looks_like_token(m["v"]) and not code_or_placeholder(m["v"]):
                        found.append(self.result(*m.span("v"), 0.85, "value paired with a secret's name"))
        if _PGPASS_HINT.search(text) is not None:
            for m in _PGPASS_LINE.finditer(text):  # the fifth field is a password whatever it looks like
                if m["v"].lower() not in NOT_SECRETS and not code_or_placeholder(m["v"]):
                    found.append(self.result(*m.span("v"), 0.85, "password file line"))
        return found

    def may_match(self, text: str, context: list[str] | None = None) -> bool:
        if self._names_secret(context) or (context and any(names_maybe_a_secret(c) for c in context)):
            return True
        if self._has_trigger(text.lower()):
            return True
        if ("'," in text or '",' in text or "env." in text) and _may_pair(text):
            return True
        return ":" in text and _PGPASS_HINT.search(text) is not None

    @staticmethod
    def _names_secret(context: list[str] | None) -> bool:
        return bool(context) and any(names_a_secret(c) for c in context or ())

    def from_key(self, text: str, context: list[str] | None) -> RecognizerResult | None:
        """A whole value under a secret-named key is a credential, whatever it looks like."""
        stripped = text.strip()
        if stripped.lower() in NOT_SECRETS or len(stripped) > 4096 or code_or_placeholder(stripped):
            return None
        named = self._names_secret(context)
        if not named and not (
            context and any(names_maybe_a_secret(c) for c in context) and looks_like_token(stripped)
        ):
            return None
        start = len(text) - len(text.lstrip())
        return self.result(start, start + len(stripped), 0.95, "value under secret-named key", by_key=True)
