"""Passwords written next to their user: in a URL, ``scheme://user:PASSWORD@host``, and on a command line,
``curl -u user:PASSWORD``, ``--user``/``--proxy-user``/``--auth``/``-a`` (httpie), ``mysql -pPASSWORD``,
``sshpass -p PASSWORD``, ``docker login -p PASSWORD`` (any registry login), ``redis-cli -a PASSWORD``,
openssl's ``-passin pass:PASSWORD`` (only the password is reported).

The user name and host stay readable (``postgres://app:<REDACTED>@db.internal:5432/app``), so the
trajectory still shows what was connected to. A command's ``user:`` value that is all digits
(``docker run -u 1000:1000``: a uid and gid) or a variable (``-u "$USER:$TOKEN"``) is not a password.
"""

from __future__ import annotations

import re

from presidio_analyzer import Pattern, RecognizerResult

from governance.redaction.recognizers.base import SluicePatternRecognizer, any_of

_COMMAND_PATTERNS = (
    "password after a command's user option",
    "password after mysql -p",
    "password after sshpass -p",
    "password of a registry login",
    "password after redis-cli -a",
    "openssl pass phrase",
    "password fed to sudo -S",
)
_URL_SHAPE = re.compile(r"://[^\s@/]*:[^\s@/]*@")
_OPTION = re.compile(r"-[ua][= \t]|--(?:user|auth|proxy-user)")  # a literal first: a fast scan
_USER_OPTION_SHAPE = re.compile(r"(?<![\w-])(?:-u|-a|--user|--proxy-user|--auth)[= \t]+[\"']?[^\s:\"'@/]+:\S")
_COMMAND_WORDS = (
    "mysql",
    "sshpass",
    "login",
    "redis-cli",
    "pass:",
    "sudo",
)  # a substring scan each: cheaper than a regex
_COMMAND_SHAPE = re.compile(
    r"\bmysql|\bsshpass|\blogin\b[^\n]*[ \t](?:-p|--password)[= \t]|\bredis-cli\b|pass:|\bsudo\b[^\n]*[ \t]-S\b"
)
_VALUE = r"(?P<q>[\"'])?(?P<v>(?(q)[^\"'\n]+|[^\s\"']+))"  # quoted: to the closing quote; bare: to a blank


class UrlPasswordRecognizer(SluicePatternRecognizer):
    TRIGGER_PATTERNS = ("://", _OPTION.pattern, any_of(_COMMAND_WORDS))
    ENTITY = "URL_PASSWORD"
    PATTERNS = [
        Pattern(
            "password in url",
            r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/@?#\"'<>]*:(?P<v>[^\s/@\"'<>]+)@[A-Za-z0-9.-]+",
            0.95,
        ),
        Pattern(
            _COMMAND_PATTERNS[0],
            # quoted, the password runs to the closing quote (it may hold blanks); bare, to the next blank
            r"(?<![\w-])(?:-u|-a|--user|--proxy-user|--auth)(?:=|[ \t]+)([\"'])?[^\s:\"'@/]+:"
            r"(?P<v>(?(1)[^\"'\n]+|[^\s\"']+))(?(1)\1)(?=[\s;|&)]|$)",
            0.9,
        ),
        Pattern(
            _COMMAND_PATTERNS[1],
            # -pSECRET or -p'SECRET' (quoted: to the closing quote)
            r"\bmysql(?:dump|admin|sh)?\b[^\n|;&]*?[ \t]-p([\"'])?(?P<v>(?(1)[^\"'\n]{3,}|[^\s\"'-][^\s\"']{2,}))",
            0.9,
        ),
        Pattern(
            _COMMAND_PATTERNS[2],
            r"\bsshpass[ \t]+-p[ \t]*([\"']?)(?P<v>[^\s\"']+)\1",
            0.9,
        ),
        Pattern(
            _COMMAND_PATTERNS[3],  # docker / podman / helm registry login -p PASSWORD (not --password-stdin)
            r"\blogin\b[^\n|;&]*?[ \t](?:-p|--password)(?:=|[ \t]+)" + _VALUE,
            0.9,
        ),
        Pattern(_COMMAND_PATTERNS[4], r"\bredis-cli\b[^\n|;&]*?[ \t](?:-a|--pass)[ \t]+" + _VALUE, 0.9),
        Pattern(_COMMAND_PATTERNS[5], r"-pass(?:in|out|word)?[ \t]+pass:" + _VALUE, 0.9),
        # sudo -S reads the password from stdin: a here-string, or echo … | sudo -S
        Pattern(_COMMAND_PATTERNS[6], r"\bsudo\b[^\n|;&]*?[ \t]-S\b[^\n|;&]*?<<<[ \t]*" + _VALUE, 0.9),
        Pattern(
            _COMMAND_PATTERNS[6],
            r"\becho[ \t]+(?P<q>[\"'])?(?P<v>(?(q)[^\"'\n]+|[^\s\"'|]+))(?(q)(?P=q))[ \t]*\|[ \t]*sudo\b[^\n|;&]*?[ \t]-S\b",
            0.9,
        ),
    ]

    def may_match(self, text: str, context: list[str] | None = None) -> bool:
        """Whether a pattern above can match: a URL with a password, a user option with ``user:…``, or a
        command word and its shape."""
        if "://" in text and _URL_SHAPE.search(text) is not None:
            return True
        if _OPTION.search(text) is not None and _USER_OPTION_SHAPE.search(text) is not None:
            return True
        return any(w in text for w in _COMMAND_WORDS) and _COMMAND_SHAPE.search(text) is not None

    def refine(self, text: str, results: list[RecognizerResult]) -> list[RecognizerResult]:
        """Drop a command's uid:gid and variables (``$TOKEN``, ``${PASS}``, ``%PASS%``)."""
        kept = []
        for r in results:
            value = text[r.start : r.end]
            pattern = r.analysis_explanation.pattern_name if r.analysis_explanation else None
            if pattern in _COMMAND_PATTERNS and (value.isdigit() or value[0] in "$%<{"):
                continue
            kept.append(r)
        return kept
