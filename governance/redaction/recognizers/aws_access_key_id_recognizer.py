"""AWS access key ids: ``AKIA`` (long-term) and ``ASIA`` (temporary) + 16 base-32 characters.

``ABIA``/``ACCA`` prefixes (STS service bearer tokens, China regions) are included; role and user ids
(``AROA``/``AIDA``) are identifiers, not credentials, and are left alone.
"""

from __future__ import annotations

from presidio_analyzer import Pattern

from governance.redaction.recognizers.base import SluicePatternRecognizer


class AwsAccessKeyIdRecognizer(SluicePatternRecognizer):
    ENTITY = "AWS_ACCESS_KEY_ID"
    PATTERNS = [
        Pattern(
            "aws access key id",
            r"(?<![A-Za-z0-9])(?P<v>(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})(?![A-Za-z0-9])",
            0.95,
        ),
    ]
    TRIGGERS = ("AKIA", "ASIA", "ABIA", "ACCA")
