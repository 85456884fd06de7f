"""OpenAI API keys: legacy ``sk-`` + 48 alphanumerics, and ``sk-proj-``/``sk-svcacct-``/``sk-admin-`` keys.

Anthropic's ``sk-ant-`` keys are left to their own recognizer. A body must mix upper case, lower case
and digits, so slugs such as ``sk-learn-tutorial-for-beginners`` are not keys.
"""

from __future__ import annotations

from presidio_analyzer import Pattern

from governance.redaction.recognizers.base import SluicePatternRecognizer


def mixed_classes(value: str) -> bool:
    """Random-looking: has an upper-case letter, a lower-case letter and a digit."""
    return (
        any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() for c in value)
    )


class OpenAiApiKeyRecognizer(SluicePatternRecognizer):
    ENTITY = "OPENAI_API_KEY"
    PATTERNS = [
        Pattern(
            "openai project/service key",
            r"(?<![A-Za-z0-9_-])(?P<v>sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,})(?![A-Za-z0-9_-])",
            0.95,
        ),
        Pattern("openai legacy key", r"(?<![A-Za-z0-9_-])(?P<v>sk-[A-Za-z0-9]{32,})(?![A-Za-z0-9_-])", 0.9),
    ]
    TRIGGERS = ("sk-",)

    def validate_result(self, pattern_text: str) -> bool:
        return mixed_classes(pattern_text[3:])
