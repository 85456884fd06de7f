"""Google API keys: ``AIza`` + 35 URL-safe characters."""

from __future__ import annotations

from presidio_analyzer import Pattern

from governance.redaction.recognizers.base import SluicePatternRecognizer


class GoogleApiKeyRecognizer(SluicePatternRecognizer):
    ENTITY = "GOOGLE_API_KEY"
    PATTERNS = [
        Pattern("google api key", r"(?<![A-Za-z0-9_-])(?P<v>AIza[0-9A-Za-z_-]{35})(?![A-Za-z0-9_-])", 0.95),
    ]
    TRIGGERS = ("AIza",)
