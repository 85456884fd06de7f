"""Slack tokens: ``xoxb-`` (bot), ``xoxp-`` (user), ``xoxa-``/``xoxr-`` (app/refresh), ``xoxs-``."""

from __future__ import annotations

from presidio_analyzer import Pattern

from governance.redaction.recognizers.base import SluicePatternRecognizer


class SlackTokenRecognizer(SluicePatternRecognizer):
    ENTITY = "SLACK_TOKEN"
    PATTERNS = [
        Pattern(
            "slack token",
            r"(?<![A-Za-z0-9_-])(?P<v>xox[bpars]-(?:[0-9]+-){1,3}[A-Za-z0-9-]{8,})(?![A-Za-z0-9_-])",
            0.95,
        ),
    ]
    TRIGGERS = ("xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-")
