"""Payment card numbers: Luhn-valid 13–19 digits, by issuer range anywhere, by any brand in payment contexts.

Replaces Presidio's ``CreditCardRecognizer``, whose regex misses the Mastercard 2-series (2221–2720) and
accepts any 13–19 digits starting with 1/3/4/5/6. Two classes are cards here:

- anywhere: a number that starts with a real issuer prefix for its length (Visa, Mastercard 51–55 and
  2221–2720, Amex, Discover, JCB, Diners, UnionPay, Maestro) and passes Luhn;
- in a payment context (a payment word shortly before it — ``card``, ``paid``, ``Karte``, ``tarjeta`` —
  or a JSON key / CSV column that names a card): any Luhn-valid 13–19 digit number, whatever the brand
  and length rules say, since issuers add ranges and people mistype lengths the checksum still accepts.

Digits may be grouped by single spaces or dashes. A match that is part of a longer digit run (order
ids, timestamps) is not a card.
"""

from __future__ import annotations

import re

from presidio_analyzer import Pattern, RecognizerResult

from governance.redaction.key_context import KIND_WORDS
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
    (38, 39, 2, (14, 16, 17, 18, 19)),
    (62, 62, 2, (16, 17, 18, 19)),  # UnionPay
    (50, 50, 2, (12, 13, 14, 15, 16, 17, 18, 19)),  # Maestro
    (56, 69, 2, (12, 13, 14, 15, 16, 17, 18, 19)),
)
_PAYMENT_WORDS = re.compile(
    r"(?i)(?:card|credit|debit|\bcc\b|\bpan\b|payment|paid|\bpay|charge|visa|master|amex|american express|"
    r"discover|jcb|maestro|unionpay|diners|karte|carte|tarjeta|carta|cartão|cvv|cvc|billing|refund|declined)"
)
CONTEXT_SCORE = 0.9
CANDIDATE_SCORE = 0.35


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
            # not glued into a longer token (an order id "OD648789502986595" is not a card)
            r"(?<![A-Za-z_\d.,/-])(?<!\d[ -])(?P<v>\d{4}(?:[ -]?\d){8,15})(?![ -]?\d)(?![.,/-]\d)(?![A-Za-z_])",
            0.3,
        ),
        Pattern(
            # grouped as printed (4-4-4-4, 4-6-5, 4-6-4, 4-4-4-4-3, 6-13): a CSV cell between commas too
            "grouped card number",
            r"(?<![A-Za-z_\d./-])(?P<v>(?:\d{4}(?P<s>[ -])\d{4,6}(?P=s)\d{4,5}(?:(?P=s)\d{1,4}){0,2}|\d{6}[ -]\d{13}))"
            r"(?![ -]?\d)(?![./-]\d)(?![A-Za-z_])",
            0.3,
        ),
    ]
    CONTEXT = ["credit", "card", "visa", "mastercard", "amex", "payment"]
    PREFILTER = re.compile(r"\d{4}(?:[ -]?\d){8}")
    NEEDS_NUMBER_RUN = True
    VERSION = "4"
    # any Luhn-valid number under a card-named key (``{"credit_card": …}``) is a card
    KEY_CONTEXT = KIND_WORDS["CREDIT_CARD"]
    KEY_CONTEXT_SCORE = CONTEXT_SCORE

    def validate_result(self, pattern_text: str) -> bool | None:
        return None  # scored in analyze: issuer range, or payment context

    def refine(self, text: str, found: list[RecognizerResult]) -> list[RecognizerResult]:
        results: list[RecognizerResult] = []
        for r in found:
            value = text[r.start : r.end]
            digits = re.sub(r"\D", "", value)
            if (
                len({c for c in value if not c.isdigit()}) > 1
                or not 13 <= len(digits) <= 19
                or not luhn_valid(digits)
            ):
                continue
            if issuer_valid(digits):
                r.score = self.MAX_SCORE
            elif _PAYMENT_WORDS.search(text, max(0, r.start - 60), r.start):
                r.score = CONTEXT_SCORE
            else:
                r.score = CANDIDATE_SCORE
            results.append(r)
        return results
