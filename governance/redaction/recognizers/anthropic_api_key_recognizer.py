"""Anthropic API keys: ``sk-ant-api03-…``, ``sk-ant-admin01-…`` and other ``sk-ant-`` credentials."""

from __future__ import annotations

from presidio_analyzer import Pattern

from governance.redaction.recognizers.base import SluicePatternRecognizer
from governance.redaction.recognizers.openai_api_key_recognizer import mixed_classes


class AnthropicApiKeyRecognizer(SluicePatternRecognizer):
    ENTITY = "ANTHROPIC_API_KEY"
    PATTERNS = [
        Pattern(
            "anthropic key", r"(?<![A-Za-z0-9_-])(?P<v>sk-ant-[A-Za-z0-9_-]{32,})(?![A-Za-z0-9_-])", 0.95
        ),
    ]
    TRIGGERS = ("sk-ant-",)

    def validate_result(self, pattern_text: str) -> bool:
        return mixed_classes(pattern_text[7:])
