"""National identity and tax numbers: each format's check digits (published sample numbers, and the same
number with one digit changed), found by shape where the shape is unambiguous, after their name where
the number looks like others, under a key that names one; right-length numbers with a wrong check digit
and numbers of other kinds stay."""

from __future__ import annotations

import json

import pytest

from governance.config import RedactionConfig
from governance.redaction import Redactor
from governance.redaction.recognizers import national_id_checks as check

VALID = [
    (check.br_cpf, "529.982.247-25"),
    (check.es_dni, "12345678Z"),
    (check.es_nie, "X1234567L"),
    (check.it_codice_fiscale, "RSSMRA85T10A562S"),
    (check.uk_nhs, "943 476 5919"),
    (check.ca_sin, "046 454 286"),
    (check.cn_resident_id, "11010519491231002X"),
    (check.de_steuer_id, "86095742719"),
    (check.nl_bsn, "111222333"),
    (check.pl_pesel, "44051401359"),
    (check.se_personnummer, "811218-9876"),
    (check.in_aadhaar, "2341 2341 2346"),
    (check.jp_my_number, "123456789018"),
    (check.fr_nir, "1 85 05 78 006 084 91"),
    (check.kr_rrn, "900101-1234568"),
]


@pytest.mark.parametrize(("valid", "number"), VALID, ids=[v[0].__name__ for v in VALID])
def test_check_digits(valid, number: str) -> None:
    assert valid(number)
    last = number.rstrip()[-1]
    changed = number[:-1] + ("0" if last != "0" else "1") if last.isdigit() else number[:-1] + "A"
    if changed[-1] == number[-1]:
        changed = number[:-1] + "B"
    assert not valid(changed)


def test_names_and_formats_that_are_not_numbers() -> None:
    assert check.uk_nino("AB123456C") and not check.uk_nino("QQ123456C") and not check.uk_nino("GB123456A")
    assert check.in_pan("ABCPE1234F") and not check.in_pan("ABCDE1234F")
    assert not check.br_cpf("111.111.111-11")


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor.from_config(RedactionConfig())


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("Titular: Ana, CPF 390.533.447-05, contrato 88", "390.533.447-05"),  # by shape
        ("cliente con DNI 87654321X en Madrid", "87654321X"),
        ("Residente NIE Y7654321G", "Y7654321G"),
        ("Il codice fiscale è BNCGVN80A01H501J.", "BNCGVN80A01H501J"),
        ("身份证号码：440304198506214621", "440304198506214621"),
        ("주민등록번호 850621-2345674 확인", "850621-2345674"),
        ("NI number AB 12 34 56 C on the payslip", "AB 12 34 56 C"),
        ("Mein Steuer-ID lautet 65929970489, bitte", "65929970489"),  # named: eleven digits alone are a phone
        ("Aadhaar no. 4991 1866 5246 attached", "4991 1866 5246"),
        ("BSN: 123456782", "123456782"),
        ("PESEL 02070803628 w formularzu", "02070803628"),
        ("personnummer 850709-9805", "850709-9805"),
        ("NHS number 401 023 2137", "401 023 2137"),
        ("SIN: 130 692 544", "130 692 544"),
        ("マイナンバー 123456789018", "123456789018"),
        ("national ID: 1 85 05 78 006 084 91", "1 85 05 78 006 084 91"),
    ],
)
def test_numbers_in_text(redactor: Redactor, text: str, number: str) -> None:
    out = redactor.redact_text(text)[0]
    assert number not in out and "<NATIONAL_ID_1>" in out, out


@pytest.mark.parametrize(
    ("data", "number"),
    [
        ({"cliente": {"cpf": "39053344705"}}, "39053344705"),
        ({"employee": {"steuer_id": "65929970489"}}, "65929970489"),
        ({"codiceFiscale": "BNCGVN80A01H501J"}, "BNCGVN80A01H501J"),
        ({"id_number": "123456782"}, "123456782"),
        ({"nhs_no": "401 023 2137"}, "401 023 2137"),
    ],
)
def test_numbers_under_their_key(redactor: Redactor, data: dict, number: str) -> None:
    out = redactor.redact_text(json.dumps(data))[0]
    assert number not in out and "<NATIONAL_ID_1>" in out, out


@pytest.mark.parametrize(
    "text",
    [
        "order 39053344706 shipped",  # CPF shape, wrong check digits, no name
        "Steuer-ID 65929970488 (typo)",  # named, wrong check digit
        "ISBN 978-3-16-148410-0 and EAN 4006381333931",
        '{"id": "39053344705", "request_id": "65929970489"}',  # an "id" is not an identity number
        "SKU ABCDE1234F in stock",
        "build 20240513-1234 passed",
    ],
)
def test_other_numbers_stay(redactor: Redactor, text: str) -> None:
    assert redactor.redact_text(text)[0] == text
