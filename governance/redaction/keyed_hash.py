"""Keyed hashing (HMAC-SHA256) and value normalisation shared by the state and the hash operator.

Normalisation makes the same identifier written two ways map to one digest: ``John@Example.com`` and
``john@example.com``, ``+1 (212) 555-0143`` and ``212.555.0143`` (US default region), card and IBAN
numbers with or without separators. Domain separation (``purpose``) keeps the digests stored in the
placeholder state unrelated to the ones the ``hash`` operator writes into the data.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re

import phonenumbers

_NON_ALNUM = re.compile(r"[^0-9A-Za-z]")
_SPACES = re.compile(r"\s+")


def normalise(entity_type: str, value: str, phone_region: str = "US") -> str:
    """Canonical form of a detected value, so equal identifiers share one placeholder."""
    v = value.strip()
    if entity_type == "EMAIL_ADDRESS":
        return v.lower()
    if entity_type == "PHONE_NUMBER":
        try:
            num = phonenumbers.parse(v, None if v.startswith("+") else phone_region)
            return phonenumbers.format_number(num, phonenumbers.PhoneNumberFormat.E164)
        except phonenumbers.NumberParseException:
            return re.sub(r"\D", "", v)
    if entity_type in ("CREDIT_CARD", "US_SSN", "IBAN_CODE", "NATIONAL_ID", "PASSPORT_NUMBER"):
        return _NON_ALNUM.sub("", v).upper()
    if entity_type == "IP_ADDRESS":
        try:
            return ipaddress.ip_address(v).compressed
        except ValueError:
            return v.lower()
    if entity_type in ("PERSON", "LOCATION", "NRP", "STREET_ADDRESS"):
        return _SPACES.sub(" ", v).casefold()
    return v


class KeyedHasher:
    """HMAC-SHA256 under one secret key; ``digest`` is hex, optionally truncated."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    def digest(self, purpose: str, entity_type: str, normalised: str, length: int = 32) -> str:
        msg = f"{purpose}\x1f{entity_type}\x1f{normalised}".encode()
        return hmac.new(self._key, msg, hashlib.sha256).hexdigest()[:length]
