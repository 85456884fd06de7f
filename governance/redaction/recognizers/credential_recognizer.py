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

import re2
from presidio_analyzer import Pattern, RecognizerResult

from governance.redaction.key_context import (
    NOT_SECRETS,
    code_or_placeholder,
    key_words,
    looks_like_literal,
    looks_like_token,
    names_a_secret,
    names_maybe_a_secret,
    names_secret,
)
from governance.redaction.recognizers.anchored import Anchored
from governance.redaction.recognizers.base import SluicePatternRecognizer, any_of, lowered

_TEXT_NAMES = (
    r"(?:password|passwd|pwd|passphrase|client_secret|secret_key|api_key|apikey|access_token|auth_token)"
)
# "password" in other languages, with their qualifiers ("Kennwort für das Portal", "senha do portal") and
# copulas ("é", "es", "est", "ist", "lautet", "är", "jest")
_OTHER_NAMES = (
    r"(?:passwort|kennwort|contraseña|contrasena|senha|mot[ \t]+de[ \t]+passe|mdp|wachtwoord|hasło|haslo|lösenord"
    r"|losenord|passord|adgangskode|salasana|heslo|jelszó|jelszo|şifre|sifre|parolă|пароль|密码|密碼|パスワード|비밀번호)"
)
_OTHER_QUALIFIER = (
    r"(?:[ \t]+(?:für|fur|zum|zur|de|do|da|du|del|para|pour|per|van|voor|dla|pro|for|of)"
    r"(?:[ \t]+(?:das|den|dem|die|der|la|le|el|o|a|les|los|las|het|l'))?[ \t]+[\w.@\-]{1,40}){0,2}"
)
_OTHER_COPULA = r"(?:é|e|es|est|ist|lautet|era|será|sera|är|er|on|jest|je|is)"
_VALUE = r"(?P<q>[\"']?)(?P<v>[^\s\"'<>()\[\]{},;]{6,200})(?P=q)(?![^\s\"',;)\]}])"
# Lower-cased words one of which each text pattern needs (the other languages' non-ASCII ones are looked
# for only in texts that are not ASCII).
_OTHER_TRIGGERS_NON_ASCII = ("contraseña", "hasło", "lösenord", "jelszó", "şifre", "parolă", "пароль", "密码",
                             "密碼", "パスワード", "비밀번호")  # fmt: skip


# The words each of the three text patterns below begins with, lower-case, ASCII (``Anchored``): the names
# of ``_TEXT_NAMES``; the ASCII names of ``_OTHER_NAMES`` ("mot" of "mot de passe"); a cookie header or a
# cookie pair's ";".
_STARTS = (
    ("password", "passwd", "pwd", "passphrase", "client_secret", "secret_key", "api_key", "apikey", "access_token",
     "auth_token"),
    ("passwort", "kennwort", "contrasena", "senha", "mot", "mdp", "wachtwoord", "haslo", "losenord", "passord",
     "adgangskode", "salasana", "heslo", "jelszo", "sifre"),
    ("cookie:", ";"),
)  # fmt: skip

# The words a text must hold (lower-cased) for a pattern to be worth running: on ASCII text the first words of
# the English pattern (``Anchored`` tries it nowhere else), on other text their shorter stems (case folding
# there is wider, and the pattern runs over the whole text); the other languages' names; a cookie header.
_OTHER_WORDS = ("passwort", "passord", "mot de passe", "kennwort", "contrasena", "senha", "mdp", "wachtwoord",
                "haslo", "losenord", "adgangskode", "salasana", "heslo", "jelszo", "sifre")  # fmt: skip


# The words ``_triggers`` looks for in an ASCII text, each with the pattern it stands for: (English names,
# other languages, cookies). "pass" with "password", "passwd" or "passphrase" is one of those three.
_ASCII_TRIGGER_WORDS = (
    ("password", "passwd", "passphrase", "pwd", "client_secret", "secret_key", "api_key", "apikey", "access_token",
     "auth_token"),
    _OTHER_WORDS,
    ("cookie",),
)  # fmt: skip


def _word_set(groups: tuple[tuple[str, ...], ...]) -> tuple[re2.Set, tuple[int, ...]]:
    """An RE2 set of the literal words of ``groups``, with the group of each (-1: the empty pattern first,
    which matches every text: no match at all means the scan failed)."""
    options = re2.Options()
    options.log_errors = False
    words = re2.Set.SearchSet(options)
    words.Add("")
    owner = [-1]
    for group, found in enumerate(groups):
        for w in found:
            words.Add(re.escape(w))
            owner.append(group)
    words.Compile()
    return words, tuple(owner)


_ASCII_WORDS, _ASCII_WORD_GROUP = _word_set(_ASCII_TRIGGER_WORDS)


def _triggers(low: str) -> tuple[bool, bool, bool]:
    """Which text patterns can match lower-cased ``low``: (English names, other languages, cookies). On ASCII
    text one pass of an RE2 set over its bytes finds all the words (a substring test per word scanned a
    long text some twenty times); other text is tested word by word, written out as ``in`` tests (several
    times faster than ``any`` over a tuple)."""
    ascii_text = low.isascii()
    if ascii_text:
        hits = _ASCII_WORDS.Match(low.encode("ascii"))
        if hits:
            found = [False, False, False, False]  # the last: the empty pattern's group (-1)
            for hit in hits:
                found[_ASCII_WORD_GROUP[hit]] = True
            return found[0], found[1], found[2]
    if ascii_text:  # the English pattern is tried only where one of its first words occurs
        english = (
            ("pass" in low and ("password" in low or "passwd" in low or "passphrase" in low))
            or "pwd" in low
            or "client_secret" in low
            or "secret_key" in low
            or "api_key" in low
            or "apikey" in low
            or "access_token" in low
            or "auth_token" in low
        )
    else:
        english = (
            "pass" in low
            or "pwd" in low
            or "secret" in low
            or "api_key" in low
            or "apikey" in low
            or ("_token" in low)
        )
    other = (
        "passwort" in low or "passord" in low or "mot de passe" in low
        or "kennwort" in low or "contrasena" in low or "senha" in low or "mdp" in low or "wachtwoord" in low
        or "haslo" in low or "losenord" in low or "adgangskode" in low or "salasana" in low or "heslo" in low
        or "jelszo" in low or "sifre" in low
        or (not ascii_text and any(w in low for w in _OTHER_TRIGGERS_NON_ASCII))
    )  # fmt: skip
    return english, other, "cookie" in low


COOKIE_PATTERN = "cookie value on a cookie header line"
# the value of each name=value pair of a cookie header's value (a session id: 16+ characters)
_COOKIE_PAIR = re.compile(r"(?:^|;)[ \t]*[\w.\-]{1,64}=(?P<v>[^;\s\"']{16,4096})")
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
# What a shell prints for ``kubectl get secret … | base64 -d`` is the secret, on the next line.
_DECODED_SECRET = re.compile(
    r"kubectl\b[^\n]*\bget[ \t]+secrets?\b[^\n]*\|[ \t]*base64[ \t]+(?:-d|-D|--decode)\b[^\n]*\n"
    r"(?P<v>[^\s$#>][^\n]{3,4095})"
)
# A Terraform variable named for a secret (or marked sensitive): its default is the secret.
_TF_VARIABLE = re.compile(r"\bvariable[ \t]+\"(?P<k>[^\"\n]{1,64})\"[ \t]*\{(?P<body>[^{}]{0,2000})\}")
_TF_DEFAULT = re.compile(r"\bdefault[ \t]*=[ \t]*\"(?P<v>[^\"\n]{1,512})\"")
# Some word of a secret's name: what a quoted name before a comma, or a name after "env.", must hold
# before the pair patterns run (code holds many "', " that pair nothing).
_NAME_PARTS = ("pass", "pwd", "secret", "key", "token", "auth", "cred")


_NAME_PART = re.compile("|".join(_NAME_PARTS))


def _names_secret(text: str, low: str | None, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` holds a secret's word: searched in ``low``, the shared lower-cased
    text, when given (ASCII text: same positions), else in that slice lower-cased."""
    if low is not None:
        return _NAME_PART.search(low, start, end) is not None
    return any(p in text[start:end].lower() for p in _NAME_PARTS)


def _may_pair(text: str) -> bool:
    """Whether a quoted name that holds a secret's word ends right before a comma (``"DB_PASS",``), or a
    ``process.env.NAME`` names one: a few ``find`` calls, no regex over the whole text. On ASCII text the
    words are looked for in the shared lower-cased text (same positions), one search per name."""
    low = lowered(text) if text.isascii() else None
    for q in ("'", '"'):
        end = text.find(q + ",")
        while end != -1:
            start = text.rfind(q, max(0, end - 65), end)
            if start != -1 and _names_secret(text, low, start + 1, end):
                return True
            end = text.find(q + ",", end + 2)
    at = text.find("env.")
    while at != -1:
        if _names_secret(text, low, at + 4, at + 68):
            return True
        at = text.find("env.", at + 4)
    return False


class CredentialRecognizer(SluicePatternRecognizer):
    # ``_triggers``' words in any case, the shapes ``may_match`` looks for; a secret-named key decides alone
    TRIGGER_PATTERNS = (
        any_of(_STARTS[0] + _OTHER_WORDS + ("cookie",) + _OTHER_TRIGGERS_NON_ASCII, caseless=True),
        "[^\\x00-\\x7F]",  # a text that is not ASCII: the English stems decide there (``_triggers``)
        any_of(("',", '",', "env.", "kubectl", "variable")),
        _PGPASS_HINT.pattern,
    )
    ENTITY = "CREDENTIAL"
    PATTERNS = [
        Pattern(
            "secret assignment in text",
            # "password for sudo: …", "the password of the vault is …": up to two short qualifiers
            r"(?i:(?<![A-Za-z0-9_])"
            + _TEXT_NAMES
            + r"(?:[ \t]+(?:for|of|to|on|at)[ \t]+[\w.@\-]{1,40}){0,2})"
            r"[\"']?(?:\s*[:=]\s*|\s+(?:is\s+)?)" + _VALUE,
            0.85,
        ),
        Pattern(
            "secret assignment in another language",
            r"(?i:(?<!\w)" + _OTHER_NAMES + _OTHER_QUALIFIER + r")"
            r"[\"']?(?:\s*[:=：]\s*|\s+(?:" + _OTHER_COPULA + r"\s+)?)" + _VALUE,
            0.85,
        ),
        Pattern(
            COOKIE_PATTERN,
            r"(?i:(?:\bcookie:|;))[ \t]*[\w.\-]{1,64}=(?P<v>[^;\s\"']{16,4096})",
            0.85,
        ),
    ]

    def __init__(self, supported_language: str = "en") -> None:
        super().__init__(supported_language)
        # each pattern is tried only where a word it begins with occurs (ASCII text; others scanned whole)
        self._compiled = [
            (p, Anchored(rx, starts)) for (p, rx), starts in zip(self._compiled, _STARTS, strict=True)
        ]  # type: ignore[misc]
        self._seen: tuple[str, tuple[bool, bool, bool]] = ("", (False, False, False))

    def _triggers(self, text: str) -> tuple[bool, bool, bool]:
        """``_triggers`` of ``text``, kept for the next call with the same string (``may_match`` then
        ``scan``)."""
        if text is not self._seen[0]:
            self._seen = (text, _triggers(lowered(text)))
        return self._seen[1]

    def compiled_for(self, text: str) -> list[tuple[Pattern, re.Pattern[str]]]:
        wanted = self._triggers(text)
        return [c for c, want in zip(self._compiled, wanted, strict=True) if want]

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
        found = super().scan(text, *presidio_args) if any(self._triggers(text)) else []
        if _may_pair(text):
            for rx in (_QUOTED_PAIR, _ENV_DEFAULT):
                for m in rx.finditer(text):
                    if names_secret(m["k"]) and looks_like_token(m["v"]) and not code_or_placeholder(m["v"]):
                        found.append(self.result(*m.span("v"), 0.85, "value paired with a secret's name"))
        if "base64" in text and "kubectl" in text:
            for m in _DECODED_SECRET.finditer(text):
                found.append(self.result(*m.span("v"), 0.85, "decoded secret printed by kubectl"))
        if "variable" in text and "default" in text:
            for m in _TF_VARIABLE.finditer(text):
                if not (names_secret(m["k"]) or re.search(r"\bsensitive[ \t]*=[ \t]*true\b", m["body"])):
                    continue
                d = _TF_DEFAULT.search(m["body"])
                if d is not None and looks_like_literal(d["v"]) and not code_or_placeholder(d["v"]):
                    at = m.start("body") + d.start("v")
                    found.append(self.result(at, at + len(d["v"]), 0.85, "default of a secret variable"))
        if _PGPASS_HINT.search(text) is not None:
            for m in _PGPASS_LINE.finditer(text):  # the fifth field is a password whatever it looks like
                if m["v"].lower() not in NOT_SECRETS and not code_or_placeholder(m["v"]):
                    found.append(self.result(*m.span("v"), 0.85, "password file line"))
        return found

    def keyed(self, context: list[str]) -> bool:
        return self._names_secret(context) or any(names_maybe_a_secret(c) for c in context)

    def may_match(self, text: str, context: list[str] | None = None) -> bool:
        if self._names_secret(context) or (context and any(names_maybe_a_secret(c) for c in context)):
            return True
        if any(self._triggers(text)):
            return True
        if ("'," in text or '",' in text or "env." in text) and _may_pair(text):
            return True
        if ("base64" in text and "kubectl" in text) or ("variable" in text and "default" in text):
            return True
        return ":" in text and _PGPASS_HINT.search(text) is not None

    def enhance_using_context(
        self,
        text: str,
        raw_recognizer_results: list[RecognizerResult],
        other_raw_recognizer_results: list[RecognizerResult],
        nlp_artifacts: object,
        context: list[str] | None = None,
    ) -> list[RecognizerResult]:
        """Under a cookie header's key (``{"set-cookie": "sid=…; Path=/"}``) each cookie's value is one."""
        if context and any("cookie" in key_words(c) for c in context):
            cookies = [
                self.result(*m.span("v"), 0.9, COOKIE_PATTERN, by_key=True)
                for m in _COOKIE_PAIR.finditer(text)
            ]
            if cookies:
                return cookies
        return super().enhance_using_context(
            text,
            raw_recognizer_results,
            other_raw_recognizer_results,
            nlp_artifacts,
            context,  # type: ignore[arg-type]
        )

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
