"""GitHub tokens: classic ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` and fine-grained ``github_pat_``."""

from __future__ import annotations

from presidio_analyzer import Pattern

from governance.redaction.recognizers.base import SluicePatternRecognizer


class GithubTokenRecognizer(SluicePatternRecognizer):
    ENTITY = "GITHUB_TOKEN"
    PATTERNS = [
        Pattern(
            "github classic token",
            r"(?<![A-Za-z0-9_])(?P<v>gh[pousr]_[A-Za-z0-9]{36,251})(?![A-Za-z0-9_])",
            0.95,
        ),
        Pattern(
            "github fine-grained token",
            # documented as 22 + "_" + 59 characters; any long run after the prefix is one
            r"(?<![A-Za-z0-9_])(?P<v>github_pat_[A-Za-z0-9_]{30,255})(?![A-Za-z0-9_])",
            0.95,
        ),
    ]
    TRIGGERS = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")
