"""JSON Web Tokens: three base64url parts, the header decoding to a JSON object with ``alg``.

Checking the header keeps arbitrary ``eyJ…`` base64 JSON blobs (which are not bearer tokens) out.
"""

from __future__ import annotations

import base64
import json

from presidio_analyzer import Pattern

from governance.redaction.recognizers.base import SluicePatternRecognizer


class JwtRecognizer(SluicePatternRecognizer):
    ENTITY = "JWT"
    PATTERNS = [
        Pattern(
            "jwt",
            r"(?<![A-Za-z0-9_-])(?P<v>eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*)(?![A-Za-z0-9_.-])",
            0.9,
        ),
    ]
    TRIGGERS = ("eyJ",)

    def validate_result(self, pattern_text: str) -> bool:
        header = pattern_text.split(".", 1)[0]
        try:
            decoded = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))
        except (ValueError, UnicodeDecodeError):
            return False
        return isinstance(decoded, dict) and "alg" in decoded
