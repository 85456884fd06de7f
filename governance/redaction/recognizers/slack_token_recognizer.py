"""Slack tokens: ``xoxb-`` (bot), ``xoxp-`` (user), ``xoxa-``/``xoxr-`` (app/refresh), ``xoxs-``."""

from __future__ import annotations

from presidio_analyzer import Pattern

from governance.redaction.recognizers.base import SluicePatternRecognizer


class SlackTokenRecognizer(SluicePatternRecognizer):
    ENTITY = "SLACK_TOKEN"
    PATTERNS = [
        Pattern(
            "slack token",
            r"(?<![A-Za-z0-9_-])(?P<v>(?:xoxe\.)?xox[bpearsc]-(?:[0-9A-Za-z]+-){1,4}[A-Za-z0-9-]{8,})(?![A-Za-z0-9_-])",
            0.95,
        ),
        Pattern(
            "slack app-level token",
            r"(?<![A-Za-z0-9_-])(?P<v>xapp-\d-[A-Z0-9]+-\d+-[a-f0-9]{32,})(?![A-Za-z0-9_-])",
            0.95,
        ),
        Pattern(
            "slack incoming webhook",
            r"(?P<v>https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{20,})",
            0.95,
        ),
    ]
    TRIGGERS = ("xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxe", "xoxc-", "xapp-", "hooks.slack.com")
