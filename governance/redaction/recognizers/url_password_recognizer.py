"""Passwords inside URLs: ``scheme://user:PASSWORD@host`` (only the password is reported).

The user name and host stay readable (``postgres://app:<REDACTED>@db.internal:5432/app``), so the
trajectory still shows what was connected to.
"""

from __future__ import annotations

import re

from presidio_analyzer import Pattern

from governance.redaction.recognizers.base import SluicePatternRecognizer


class UrlPasswordRecognizer(SluicePatternRecognizer):
    ENTITY = "URL_PASSWORD"
    PATTERNS = [
        Pattern(
            "password in url",
            r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/@?#\"'<>]*:(?P<v>[^\s/@\"'<>]+)@[A-Za-z0-9.-]+",
            0.95,
        ),
    ]
    TRIGGERS = ("://",)
    PREFILTER = re.compile(r"://[^\s@/]*:[^\s@/]*@")
