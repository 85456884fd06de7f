"""Names of many cultures in prose, capitals and machine-readable form; undashed SSNs named as such, national
phone numbers in the region the text points at, and ISBNs, epoch times and order ids that are not phones."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from governance.redaction import Redactor
from governance.redaction.recognizers.phone_regions import _SIGNS, guess_regions


@pytest.fixture(scope="module")
def ner(redactor_factory: Callable[..., Redactor]) -> Redactor:
    return redactor_factory(ner=True, hash_key="k")


@pytest.mark.parametrize(
    ("text", "family"),
    [("Boarding: TAKAHASHI MIDORI and KENJI MATSUMOTO, row 31.", "MATSUMOTO"),
     ("Full name: WANJIKU KAMAU\nSeat: 2A", "KAMAU"),
     ("Holder OKONKWO<<CHIDINMA<ADAEZE printed on the card.", "OKONKWO"),
     ("Hans-Peter Müller-Lüdenscheidt signed the lease.", "Müller-Lüdenscheidt"),
     ("Yesterday Maria Eduarda Cavalcanti Figueiredo renewed the plan.", "Figueiredo"),
     ("Trần Thị Thu Hà opened ticket 4411 this morning.", "Hà"),
     ("Adebayo Ogunleye moved the meeting to Thursday.", "Ogunleye"),
     ("We onboarded Ngozi Eze-Nwosu last week.", "Eze-Nwosu"),
     ("Pedro Henrique Albuquerque asked for the refund.", "Albuquerque"),
     ("Our contact in Osaka is Tomoko Inoue.", "Inoue"),
     ("Surname: KOWALCZYK\nGiven names: AGNIESZKA", "KOWALCZYK")],
)  # fmt: skip
def test_names_of_many_cultures(ner: Redactor, text: str, family: str) -> None:
    out, _, counts = ner.redact_text(text)
    assert family not in out and counts["PERSON"] >= 1, out


@pytest.mark.parametrize(
    "text",
    ["Install Visual Studio Code and Docker Desktop, then run Apache Kafka.",
     "HTTP GET /api/v2 returned 503 SERVICE UNAVAILABLE.",
     "Upgraded Ubuntu Linux to the latest release; Maria DB is next.",
     "Hi ALL, the deploy is done.", "The Park Avenue branch opens at 9."],
)  # fmt: skip
def test_products_shouts_and_places_are_not_people(ner: Redactor, text: str) -> None:
    _, _, counts = ner.redact_text(text)
    assert counts["PERSON"] == 0


@pytest.mark.parametrize(
    ("text", "digits"),
    [
        ("SSN 219099999 for the W-2", "219099999"),
        ("Social security number on file: 536 22 8719", "536 22 8719"),
    ],
)
def test_undashed_ssn_in_context(ner: Redactor, text: str, digits: str) -> None:
    out, _, counts = ner.redact_text(text)
    assert digits not in out and counts["US_SSN"] == 1, out


def test_nine_digits_without_a_name_are_not_an_ssn(ner: Redactor) -> None:
    _, _, counts = ner.redact_text("Ticket 219099999 was merged.")
    assert counts["US_SSN"] == 0


def test_region_guess() -> None:
    assert guess_regions("Lagos office, +234 line") == ["NG"]
    assert (
        "PL" in guess_regions("Biuro w Warszawie? No: Warsaw, 120 zł") and guess_regions("plain text") == []
    )
    assert guess_regions("call +48 601 234 567") == ["PL"]  # a dialling code alone
    assert guess_regions("price: R$ 120") == ["BR"] and guess_regions("price: 120 £") == ["GB"]
    assert guess_regions("price: 120 dollars, ref 48") == []


def test_every_region_sign_needs_a_plus_a_dollar_or_a_non_ascii_character() -> None:
    """``guess_regions`` looks for signs only in texts holding one of those."""
    assert all("+" in s or "$" in s or not s.isascii() for signs in _SIGNS.values() for s in signs)


@pytest.mark.parametrize(
    ("text", "number"),
    [("Our Lagos rep: 0805 618 2290", "0805 618 2290"), ("Biuro w Polsce (Warsaw): 601 234 567", "601 234 567"),
     ("Melbourne store (03) 9654 3871", "(03) 9654 3871"), ("Mobile in Australia 0421 556 309", "0421 556 309")],
)  # fmt: skip
def test_national_phone_numbers(ner: Redactor, text: str, number: str) -> None:
    out, _, counts = ner.redact_text(text)
    assert number not in out and counts["PHONE_NUMBER"] == 1, out


@pytest.mark.parametrize(
    "text",
    ["Cited as ISBN 978-1-4028-9462-6 in chapter 2.", "See 9781402894626 (2nd ed.) for the proof.",
     "ts=1717171717 order 100023456789 done", "Order ORD-2026-502799 shipped."],
)  # fmt: skip
def test_isbns_epochs_and_order_ids_are_not_phones(ner: Redactor, text: str) -> None:
    _, _, counts = ner.redact_text(text)
    assert counts["PHONE_NUMBER"] == 0


def test_card_groupings(ner: Redactor) -> None:
    out, _, counts = ner.redact_text("Diners 3600 666633 3344 and Amex 3714 496353 98431 on file")
    assert counts["CREDIT_CARD"] == 2 and "666633" not in out and "496353" not in out, out
