"""Stripe secret and restricted keys: ``sk_live_``/``rk_live_`` (and their ``_test_`` twins).

Publishable keys (``pk_…``) are public by design and are not matched.
"""

from __future__ import annotations

from presidio_analyzer import Pattern

from governance.redaction.recognizers.base import SluicePatternRecognizer


class StripeKeyRecognizer(SluicePatternRecognizer):
    ENTITY = "STRIPE_KEY"
    PATTERNS = [
        Pattern(
            "stripe secret key",
            r"(?<![A-Za-z0-9_])(?P<v>(?:[sr]k_(?:live|test)_|whsec_)[A-Za-z0-9]{16,247})(?![A-Za-z0-9_])",
            0.95,
        ),
    ]
    TRIGGERS = ("k_live_", "k_test_", "whsec_")
