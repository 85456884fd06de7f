"""Self-checks for the personal-data evaluation corpus, run on every record before it is written.

Every must_redact / must_keep string present in the record; no must_keep string touched by a
must_redact string; no piece of a value (a family name, a street line) anywhere but inside the value;
the arithmetic each number class promises (Luhn and brand prefix for cards, SSN issuance rules, all
ICAO 9303 check digits of a TD3 zone, ISBN/GTIN-13 check digits, near misses that fail Luhn); no
string quoted in the task brief reused.
"""

from __future__ import annotations

import json
import re

import corpus_values as cv
from number_records import BRANDS

FORBIDDEN = ["Lincoln Ave", "Piotrkowska", "Laranjeiras", "Martyrs", "Hauptstraße", "Nishi-Shinjuku", "西新宿",
             "HAYASHI", "SUBRAMANIAN", "MEENAKSHI", "Karl-Heinz", "Schmidt-Bauer", "Nascimento Araújo",
             "123456789"]  # fmt: skip


def haystacks(rec: dict) -> list[str]:
    if "text" in rec:
        return [rec["text"]]
    out: list[str] = []

    def walk(o: object) -> None:
        if isinstance(o, dict):
            for k, v in o.items():
                out.append(str(k))
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
        elif not isinstance(o, bool):
            out.append(str(o))

    walk(rec["data"])
    return out


def check(rec: dict) -> list[str]:
    errs = []
    hs = haystacks(rec)
    if rec["class"] != "clean" and not rec["must_redact"]:
        errs.append("no must_redact")
    if rec["class"] == "clean" and rec["must_redact"]:
        errs.append("clean record with must_redact")
    for s in rec["must_redact"] + rec["must_keep"]:
        if not any(s in h for h in hs):
            errs.append(f"absent: {s!r}")
    values = sorted(rec["_values"], key=len, reverse=True)
    for h in hs:
        stripped = h
        for v in sorted(rec["must_redact"], key=len, reverse=True):
            stripped = stripped.replace(v, "\x00")
        for k in rec["must_keep"]:
            if k in h and k not in stripped:
                errs.append(f"must_keep {k!r} overlaps a must_redact string")
        outside = h
        for v in values:
            outside = outside.replace(v, "\x00")
        for p in rec["must_redact"]:
            if p in outside:
                errs.append(f"piece {p!r} occurs outside its value")
    errs += verify_numbers(rec, hs)
    blob = json.dumps(rec, ensure_ascii=False)
    errs += [f"forbidden example reused: {f}" for f in FORBIDDEN if f in blob]
    return errs


def verify_numbers(rec: dict, hs: list[str]) -> list[str]:
    """Re-checks, on the written record, the arithmetic each number class promises."""
    errs = []
    cls = rec["class"]
    if cls == "card":
        prefixes, length, _ = BRANDS[rec["brand"]]
        d = rec["digits"]
        if not (cv.luhn_ok(d) and len(d) == length and d.startswith(tuple(prefixes))):
            errs.append("card fails Luhn / brand prefix / length")
    if cls == "ssn":
        d = rec["digits"]
        area, group, serial = int(d[:3]), int(d[3:5]), int(d[5:])
        if not (len(d) == 9 and 0 < area < 900 and area != 666 and group and serial):
            errs.append("SSN breaks issuance rules")
    if rec.get("variant") == "mrz_td3":
        lines = [m for h in hs for m in re.findall(r"(?<![A-Z0-9<])[A-Z0-9<]{44}(?![A-Z0-9<])", h)]
        if len(lines) != 2 or not cv.td3_ok(lines[0], lines[1]):
            errs.append(f"MRZ check digits fail: {lines}")
    if rec.get("near_miss") in ("isbn13", "gtin13") and not cv.isbn13_ok(rec["must_keep"][0]):
        errs.append("ISBN/GTIN-13 check digit wrong")
    if rec.get("near_miss") == "non_luhn_16" and cv.luhn_ok(rec["must_keep"][0]):
        errs.append("near-miss 16-digit number passes Luhn")
    return errs


def self_test() -> None:
    assert cv.td3_ok(*cv.ICAO_SPECIMEN), "ICAO specimen zone fails the check-digit reader"
    l1, l2 = cv.td3("UTO", "Eriksson", "Anna Maria", "L898902C3", "UTO", "740812", "F", "120415")
    assert l2[:28] == cv.ICAO_SPECIMEN[1][:28], l2
    assert cv.luhn_ok("4111111111111111") and not cv.luhn_ok("4111111111111112")
    assert cv.luhn_check_digit("7992739871") == "3"
    assert cv.isbn13_ok("978-0-306-40615-7") and not cv.isbn13_ok("978-0-306-40615-8")
