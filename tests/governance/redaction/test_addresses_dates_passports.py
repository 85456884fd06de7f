"""Street addresses, dates of birth and passport numbers: found in prose, in key = value lines and under
their JSON keys, in several countries' conventions; dates without a birth cue, network addresses and
document-shaped numbers without a passport's name stay."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from governance.redaction import Redactor
from governance.redaction.recognizers.passport_recognizer import check_digit, mrz_data_line
from governance.redaction.recognizers.street_address_recognizer import romaji


@pytest.fixture(scope="module")
def plain(redactor_factory: Callable[..., Redactor]) -> Redactor:
    return redactor_factory(hash_key="k")


@pytest.mark.parametrize(
    ("text", "address"),
    [("Ship it to 2210 W Harrison Blvd, Apt 7C, Boise ID 83702.", "2210 W Harrison Blvd, Apt 7C"),
     ("Deliver to 17 Kingsley Road before noon.", "17 Kingsley Road"),
     ("Le colis part du 12 bis, avenue de la République demain.", "avenue de la République"),
     ("Envie para Avenida Paulista, 1578 ainda hoje.", "Avenida Paulista, 1578"),
     ("Oficina en Calle de Serrano 41, Madrid.", "Calle de Serrano 41"),
     ("Spedire a Via Garibaldi 88, Torino.", "Via Garibaldi 88"),
     ("Adres: ul. Długa 14/3, Gdańsk", "ul. Długa 14/3"),
     ("Bitte an Lindenstraße 27b schicken.", "Lindenstraße 27b"),
     ("Wohnt jetzt Frankfurter Allee 101.", "Frankfurter Allee 101"),
     ("Kantoor: Prinsengracht 263, Amsterdam", "Prinsengracht 263"),
     ("Our Tokyo office is at Minami-Aoyama 5-12-3, Minato-ku.", "Minami-Aoyama 5-12-3"),
     ("配送先: 東京都渋谷区神宮前3丁目14-7", "神宮前3丁目14-7")],
)  # fmt: skip
def test_addresses_in_text(plain: Redactor, text: str, address: str) -> None:
    out, _, counts = plain.redact_text(text)
    assert address not in out, out
    assert counts["STREET_ADDRESS"] >= 1


@pytest.mark.parametrize(
    "body",
    [{"shipping_address": "Flat 2, 9 Orchard Mews, Leeds"}, {"addressLine1": "Quinta do Lago 3"},
     {"Anschrift": "Am Markt 4, Bremen"}, {"street": "Oak Hollow"}],
)  # fmt: skip
def test_addresses_under_keys(plain: Redactor, body: dict) -> None:
    out, _, counts = plain.redact_payload(json.dumps(body))
    assert list(body.values())[0] not in out and counts["STREET_ADDRESS"] == 1, out


def test_address_lines_in_yaml_and_network_addresses(plain: Redactor) -> None:
    out, _, counts = plain.redact_text(
        "customer:\n  address: 88 Willow Crescent, Dunedin\n  ip_address: 10.2.3.4\n"
    )
    assert "Willow Crescent" not in out and counts["STREET_ADDRESS"] == 1
    out, _, counts = plain.redact_payload(
        json.dumps({"email_address": "x", "mac_address": "00:1a:2b:3c:4d:5e"})
    )
    assert counts["STREET_ADDRESS"] == 0, out


@pytest.mark.parametrize(
    "text",
    ["Retry 3 times on step 4 and wait 30 s.", "Page 12-14 of the report covers Q3.", "Run 5 rounds of the quick test.",
     "Version 6-28-9 shipped; see Range 1-2-3.", "We moved 200 items to the main branch."],
)  # fmt: skip
def test_numbers_near_words_are_not_addresses(plain: Redactor, text: str) -> None:
    _, _, counts = plain.redact_text(text)
    assert counts["STREET_ADDRESS"] == 0


def test_romaji() -> None:
    assert all(romaji(w) for w in ("Shinjuku", "Roppongi", "Nishi", "Ōsaka", "Umeda", "Aoyama"))
    assert not any(romaji(w) for w in ("Build", "Version", "Page", "Step", "Linux", "Release"))


@pytest.mark.parametrize(
    ("text", "date"),
    [("The patient was born on 17 March 1949 in Cork.", "17 March 1949"),
     ("DOB: 1983-11-02, allergies: none", "1983-11-02"),
     ("date of birth 02/11/1983", "02/11/1983"),
     ("Elle est née le 3 février 1975 à Lyon.", "3 février 1975"),
     ("Herr Braun, geboren am 12.05.1961, wohnhaft in Köln", "12.05.1961"),
     ("Data de nascimento: 4 de outubro de 1958", "4 de outubro de 1958"),
     ("Fecha de nacimiento: 21/06/1990", "21/06/1990"),
     ("生年月日: 1979年8月15日", "1979年8月15日"),
     ("Born October 4, 1958 in Ohio.", "October 4, 1958")],
)  # fmt: skip
def test_dates_of_birth(plain: Redactor, text: str, date: str) -> None:
    out, _, counts = plain.redact_text(text)
    assert date not in out and counts["DATE_OF_BIRTH"] == 1, out


def test_dates_without_a_birth_cue_stay(plain: Redactor) -> None:
    text = "Released 2026-03-14; the invoice of 4 October 2025 is due 01/12/2025."
    out, _, counts = plain.redact_text(text)
    assert out == text and not counts
    out, _, counts = plain.redact_payload(json.dumps({"dob": "1970-01-30", "created_at": "2026-01-30"}))
    assert "1970-01-30" not in out and "2026-01-30" in out and counts["DATE_OF_BIRTH"] == 1


# ICAO 9303's own specimen: Anna Maria Eriksson, Utopia
SPECIMEN = "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL898902C36UTO7408122F1204159ZE184226B<<<<<10"


def test_mrz_check_digits() -> None:
    line2 = SPECIMEN.split("\n")[1]
    assert check_digit("L898902C3") == "6" and check_digit("740812") == "2"
    assert mrz_data_line(line2)
    assert not mrz_data_line(line2.replace("L898902C3", "L898902C4"))


def test_machine_readable_zone(plain: Redactor) -> None:
    out, _, counts = plain.redact_text(f"Scan of page 2:\n{SPECIMEN}\nend of scan")
    assert "L898902C3" not in out and "ERIKSSON" not in out and "7408122" not in out, out
    assert counts["PASSPORT_NUMBER"] == 1 and counts["PERSON"] == 1


def test_a_zone_with_wrong_check_digits_is_not_a_passport(plain: Redactor) -> None:
    bad = SPECIMEN.replace("L898902C36", "L898902C37")
    _, _, counts = plain.redact_text(bad)
    assert counts["PASSPORT_NUMBER"] == 0


@pytest.mark.parametrize(
    ("text", "number"),
    [("Passport number: X4409217, expires 2031.", "X4409217"),
     ("His passport no. is 533380006.", "533380006"),
     ("Numéro de passeport : 19AV52117", "19AV52117"),
     ("Reisepassnummer C4J7R2X19", "C4J7R2X19"),
     ("O número do passaporte é RB204417.", "RB204417"),
     ("PASSAPORTO N. YA7720315", "YA7720315")],
)  # fmt: skip
def test_passport_after_its_name(plain: Redactor, text: str, number: str) -> None:
    out, _, counts = plain.redact_text(text)
    assert number not in out and counts["PASSPORT_NUMBER"] == 1, out


def test_passport_under_its_key_and_order_ids_elsewhere(plain: Redactor) -> None:
    out, _, counts = plain.redact_payload(
        json.dumps({"passportNumber": "GK 8831054", "order_id": "AB1234567"})
    )
    assert "8831054" not in out and "AB1234567" in out and counts["PASSPORT_NUMBER"] == 1
    _, _, counts = plain.redact_text("Order AB1234567 ships from gate C4J7R2X19.")
    assert counts["PASSPORT_NUMBER"] == 0
