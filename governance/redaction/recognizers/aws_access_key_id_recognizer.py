"""AWS access key ids and IAM unique ids: a documented four-letter prefix + 16 base-32 characters.

``AKIA`` (long-term key), ``ASIA`` (temporary), ``ABIA``/``ACCA`` (STS bearer tokens, China regions),
and the IAM unique-id prefixes (``AIDA`` user, ``AROA`` role, ``AGPA`` group, ``ANPA``/``ANVA`` policies,
``AIPA`` instance profile, ``APKA`` public key): the ids are not credentials, but they name an account's
principals, are never needed for training, and have the same shape a key id has.
"""

from __future__ import annotations

from presidio_analyzer import Pattern

from governance.redaction.recognizers.base import SluicePatternRecognizer


class AwsAccessKeyIdRecognizer(SluicePatternRecognizer):
    ENTITY = "AWS_ACCESS_KEY_ID"
    PATTERNS = [
        Pattern(
            "aws access key id",
            r"(?<![A-Za-z0-9])(?P<v>(?:AKIA|ASIA|ABIA|ACCA|AIDA|AROA|AGPA|ANPA|ANVA|AIPA|APKA)[A-Z2-7]{16})(?![A-Za-z0-9])",
            0.95,
        ),
    ]
    VERSION = "2"
    TRIGGERS = ("AKIA", "ASIA", "ABIA", "ACCA", "AIDA", "AROA", "AGPA", "ANPA", "ANVA", "AIPA", "APKA")
