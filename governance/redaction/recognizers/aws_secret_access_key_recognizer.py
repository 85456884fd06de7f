"""AWS secret access keys: 40 base-64 characters, recognized only in context.

A bare 40-character string is too common (hashes, ids) to be a secret by itself, so it scores 0.3
(below the threshold) unless either the text names it (``aws_secret_access_key = …``,
``"SecretAccessKey": "…"``) or the JSON key it sits under does (``context=["aws_secret_access_key"]``).
Lower-case hex (git and content hashes) never matches: a key must mix upper, lower and digits.
"""

from __future__ import annotations

import re

from presidio_analyzer import Pattern

from governance.redaction.recognizers.base import SluicePatternRecognizer, context_words
from governance.redaction.recognizers.openai_api_key_recognizer import mixed_classes

_NAME = r"(?i:aws_?secret(?:_?access)?_?key|secret_?access_?key|aws_?secret)"


class AwsSecretAccessKeyRecognizer(SluicePatternRecognizer):
    ENTITY = "AWS_SECRET_ACCESS_KEY"
    PATTERNS = [
        Pattern(
            "aws secret key after its name",
            _NAME + r"[\"']?\s*[:=]\s*[\"']?(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
            0.95,
        ),
        Pattern("bare 40-char base64", r"(?<![A-Za-z0-9/+=])(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])", 0.3),
    ]
    KEY_CONTEXT = frozenset({"secret", "aws_secret_access_key", "secretaccesskey", "secret_key", "secretkey"})
    KEY_CONTEXT_SCORE = 0.9
    TRIGGERS = ("ecret", "ECRET")
    PREFILTER = re.compile(r"[A-Za-z0-9/+]{40}")
    TRIGGER_PATTERNS = ("ecret|ECRET",)  # a secret named in the text; under a secret key, the key decides

    def keyed(self, context: list[str]) -> bool:
        return not context_words(context).isdisjoint(self.KEY_CONTEXT)

    def may_match(self, text: str, context: list[str] | None = None) -> bool:
        """Only texts that name a secret, or values under a secret-named key: a bare 40-char string
        elsewhere could only ever be a below-threshold candidate."""
        if context and not context_words(context).isdisjoint(self.KEY_CONTEXT):
            return self.PREFILTER.search(text) is not None
        return super().may_match(text, context)

    def validate_result(self, pattern_text: str) -> bool:
        return mixed_classes(pattern_text)
