"""PEM private key blocks (RSA, EC, DSA, OpenSSH, PKCS#8, encrypted), whole block from BEGIN to END.

A block cut off before its END line (truncated tool output) is still caught from its BEGIN line and body.
"""

from __future__ import annotations

from presidio_analyzer import Pattern

from governance.redaction.recognizers.base import SluicePatternRecognizer

_BEGIN = r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
_END = r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"


class PrivateKeyRecognizer(SluicePatternRecognizer):
    ENTITY = "PRIVATE_KEY"
    PATTERNS = [
        Pattern("pem private key block", _BEGIN + r"[\s\S]{16,}?" + _END, 1.0),
        Pattern("truncated pem private key", _BEGIN + r"(?:\\n|\\r|[\sA-Za-z0-9+/=:,-]){16,}", 0.9),
    ]
    TRIGGERS = ("PRIVATE KEY",)
