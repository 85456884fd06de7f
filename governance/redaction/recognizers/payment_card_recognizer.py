"""Payment card numbers by issuer range, length and Luhn checksum.

Replaces Presidio's ``CreditCardRecognizer``, whose regex misses the Mastercard 2-series (2221–2720) and
accepts any 13–19 digits starting with 1/3/4/5/6. Here a number must start with a real issuer prefix
for its length (Visa, Mastercard 51–55 and 2221–2720, Amex, Discover, JCB, Diners, UnionPay) and pass
Luhn; digits may be grouped by single spaces or dashes. A match that is part of a longer digit run
(order ids, timestamps) is not a card.
"""

from __future__ import annotations

import re

from presidio_analyzer import Pattern

from governance.redaction.recognizers.base import SluicePatternRecognizer, luhn_valid

# (prefix low, prefix high, prefix length, allowed lengths)
ISSUER_RANGES: tuple[tuple[int, int, int, tuple[int, ...]], ...] = (
    (4, 4, 1, (13, 16, 19)),  # Visa
    (51, 55, 2, (16,)),  # Mastercard
    (2221, 2720, 4, (16,)),  # Mastercard 2-series
    (34, 34, 2, (15,)),  # American Express
    (37, 37, 2, (15,)),
    (6011, 6011, 4, (16, 17, 18, 19)),  # Discover
    (644, 649, 3, (16, 17, 18, 19)),
    (65, 65, 2, (16, 17, 18, 19)),
    (3528, 3589, 4, (16, 17, 18, 19)),  # JCB
    (300, 305, 3, (14, 15, 16, 17, 18, 19)),  # Diners Club
    (36, 36, 2, (14, 15, 16, 17, 18, 19)),
    (38, 39, 2, (16, 17, 18, 19)),
    (62, 62, 2, (16, 17, 18, 19)),  # UnionPay
)


def issuer_valid(digits: str) -> bool:
    """Prefix and length belong to a card issuer."""
    n = len(digits)
    for low, high, plen, lengths in ISSUER_RANGES:
        if n in lengths and low <= int(digits[:plen]) <= high:
            return True
    return False


class PaymentCardRecognizer(SluicePatternRecognizer):
    ENTITY = "CREDIT_CARD"
    PATTERNS = [
        Pattern(
            "card number",
            r"(?<![\d.,/-])(?<!\d[ -])(?P<v>[2-6]\d{3}(?:[ -]?\d){9,15})(?![ -]?\d)(?![.,/-]\d)",
            0.3,
        ),
    ]
    CONTEXT = ["credit", "card", "visa", "mastercard", "amex", "payment"]
    PREFILTER = re.compile(r"[2-6]\d{3}[ -]?\d{4}")
    VERSION = "1"

    def validate_result(self, pattern_text: str) -> bool:
        digits = re.sub(r"\D", "", pattern_text)
        seps = {c for c in pattern_text if not c.isdigit()}
        return len(seps) <= 1 and issuer_valid(digits) and luhn_valid(digits)
