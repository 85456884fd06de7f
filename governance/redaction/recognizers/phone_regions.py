"""Which countries' national phone formats a text may use: guessed from the words and signs around them.

A national number carries no country code (``0803 123 4567`` in Lagos, ``512 345 678`` in Warsaw,
``(02) 9374 4000`` in Sydney), so libphonenumber must be told the region. The tenant's
``redaction.phone_regions`` are always tried; a text that names a country, one of its large cities, its
currency (name, code or sign) or its dialling code (``+234``, ``(+48)``) adds that country's region.
One set test on the text's words (shared with the other recognizers) and a few substring tests for the
signs: no scan of its own.
"""

from __future__ import annotations

from governance.redaction.recognizers.base import letter_words, vocabulary

# region -> words (lower case, letters only) that place a text in it
_WORDS: dict[str, frozenset[str]] = {
    "NG": vocabulary("nigeria nigerian lagos abuja ibadan kano naira ngn"),
    "PL": vocabulary(
        "poland polska polish warsaw warszawa kraków krakow łódź lodz wrocław gdańsk poznań pln złotych"
    ),
    "AU": vocabulary("australia australian sydney melbourne brisbane perth adelaide canberra aud"),
    "GB": vocabulary("uk britain british england london manchester scotland wales gbp"),
    "IE": vocabulary("ireland irish dublin cork"),
    "IN": vocabulary("india indian mumbai delhi bangalore bengaluru chennai hyderabad kolkata inr rupees"),
    "DE": vocabulary("germany deutschland german berlin münchen munich hamburg köln frankfurt"),
    "FR": vocabulary("france french paris lyon marseille toulouse"),
    "ES": vocabulary("spain españa spanish madrid barcelona valencia sevilla"),
    "IT": vocabulary("italy italia italian roma rome milano milan napoli torino"),
    "NL": vocabulary("netherlands nederland dutch amsterdam rotterdam utrecht"),
    "BR": vocabulary("brazil brasil brazilian paulo rio brl reais"),
    "PT": vocabulary("portugal lisboa lisbon porto"),
    "JP": vocabulary("japan japanese tokyo osaka kyoto yokohama jpy yen"),
    "ZA": vocabulary("johannesburg pretoria durban zar rand"),
    "KE": vocabulary("kenya nairobi mombasa kes"),
    "NZ": vocabulary("zealand auckland wellington nzd"),
    "MX": vocabulary("mexico méxico guadalajara monterrey mxn"),
}
_SIGNS: dict[str, tuple[str, ...]] = {
    "NG": ("₦", "+234"),
    "PL": ("zł", "+48"),
    "AU": ("A$", "+61"),
    "GB": ("£", "+44"),
    "IE": ("+353",),
    "IN": ("₹", "+91"),
    "DE": ("+49",),
    "FR": ("+33",),
    "ES": ("+34",),
    "IT": ("+39",),
    "NL": ("+31",),
    "BR": ("R$", "+55"),
    "PT": ("+351",),
    "JP": ("¥", "+81", "日本"),
    "ZA": ("+27",),
    "KE": ("+254",),
    "NZ": ("+64",),
    "MX": ("+52",),
}
_ALL_WORDS = frozenset().union(*_WORDS.values())
# Every sign holds a "+", a "$" or a character outside ASCII (a test checks it): an ASCII text with neither
# holds none of them
# National numbers written without a leading trunk 0 (Poland, Spain, Italy's mobiles, Portugal, Denmark ...)
NO_TRUNK_PREFIX = frozenset({"PL", "ES", "IT", "PT", "DK", "NO", "GR", "LU", "CZ", "SK"})


def guess_regions(text: str) -> list[str]:
    """Regions the text points at, in a fixed order (none: the tenant's regions alone)."""
    words = letter_words(text)
    hit = not words.isdisjoint(_ALL_WORDS)
    signs = "+" in text or "$" in text or not text.isascii()  # else no sign of any region can occur
    if not hit and not signs:
        return []
    out: list[str] = []
    for region, vocab in _WORDS.items():
        if (hit and not words.isdisjoint(vocab)) or (signs and any(sign in text for sign in _SIGNS[region])):
            out.append(region)
    return out
