"""Classes of value held by context: cards in payment contexts, phone shapes in contact contexts, tokens."""

from __future__ import annotations

import json

import pytest

from governance.redaction import Redactor


def luhn(body: str) -> str:
    total = sum(
        (d * 2 - 9 if d * 2 > 9 else d * 2) if i % 2 == 0 else d
        for i, d in enumerate(map(int, reversed(body)))
    )
    return body + str((10 - total % 10) % 10)


@pytest.mark.parametrize("body", ["90417722153366", "1234567890123", "41111111111111111", "700012345678901"])
def test_luhn_valid_numbers_of_any_brand_are_cards_in_payment_contexts(plain: Redactor, body: str) -> None:
    number = luhn(body)
    for text in (f"Charge the card {number} again", f"Karte {number} wurde abgelehnt", f"paid with {number}"):
        out, _, counts = plain.redact_text(text)
        assert number not in out and counts == {"CREDIT_CARD": 1}, out
    out, _, _ = plain.redact_payload(json.dumps({"credit_card": number, "order": "ORD-2024-118833"}))
    assert number not in out and "ORD-2024-118833" in out
    # outside a payment context a brand-less Luhn-valid number is an id
    if not number.startswith("4"):
        assert plain.redact_text(f"order id {number} shipped")[0] == f"order id {number} shipped"


@pytest.mark.parametrize("grouped", ["3782 822463 10005", "3714-496353-98431", "2221 0012 3412 3456"])
def test_amex_and_mastercard_2_series_anywhere(plain: Redactor, grouped: str) -> None:
    digits = grouped.replace(" ", "").replace("-", "")
    value = grouped if digits == luhn(digits[:-1]) else grouped[:-1] + luhn(digits[:-1])[-1]
    out, _, counts = plain.redact_text(f"ref {value} noted")
    assert value not in out and counts == {"CREDIT_CARD": 1}


@pytest.mark.parametrize("phone", ["(211) 555-0147", "(123) 555-0199", "(809) 555-0142", "+1 (876) 555-0100",
                                   "611.416.2497", "1-345-555-0123"])  # fmt: skip
def test_us_shaped_numbers_are_phones_whatever_the_area_code(plain: Redactor, phone: str) -> None:
    out, _, counts = plain.redact_text(f"Customer says {phone} is best")
    assert phone not in out and counts == {"PHONE_NUMBER": 1}, out
    out, _, _ = plain.redact_payload(json.dumps({"contact": phone, "tier": "gold"}))
    assert phone not in out


@pytest.mark.parametrize(
    "phone", ["06 66 40 03 92", "030 1234567", "03-1234-5678", "(11) 91234-5678", "0412 345 678"]
)
def test_national_formats_in_contact_contexts(plain: Redactor, phone: str) -> None:
    out, _, counts = plain.redact_payload(json.dumps({"callback_number": phone}))
    assert phone not in out, out
    out, _, _ = plain.redact_text(f"Rappelez-moi au {phone}, merci.")
    assert phone not in out, out


@pytest.mark.parametrize(
    "text",
    ["version 10.0.19041.1 installed", "$ snmpwalk -v2c localhost 1.3.6.1.4.1.33973.8",
     "registry.internal/api@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
     "request 74758e1a-7c57-6d95-f530-5e5e3528fb78 took 1234.56 ms", "build 2023-08-16 12:01 ok 1234567"],
)  # fmt: skip
def test_near_misses_stay(plain: Redactor, text: str) -> None:
    assert plain.redact_text(text) == (text, plain.redact_text(text)[1], plain.redact_text(text)[2])
    assert not plain.redact_text(text)[2]


@pytest.mark.parametrize(
    "token",
    ["hf_Qk29XbLmT7vWc4RzN8pD3sYfG6hJ1aEuVo", "glpat-x7Kq2LmZ9pR4vT8wB1nC", "npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
     "SG.abcdefghijklmnopqrstuv.ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefg", "xapp-1-A077JOJR2ZJ-1299237967325-"
     + "a443d15ff53bb32db045a8b3cc8ab5fc", "whsec_QT2oue9a7IUzy29ngebirmtG"],
)  # fmt: skip
def test_vendor_tokens_in_free_text(plain: Redactor, token: str) -> None:
    out, _, counts = plain.redact_text(f"use {token} for now, thanks")
    assert token not in out and counts, out
