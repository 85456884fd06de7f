"""SSN, national phone number and payment card records for the personal-data evaluation corpus.

SSNs follow the issuance rules (area 001-899 but not 666, group 01-99, serial 0001-9999) and are
written without dashes. Phones are national formats with no country code (UK, Nigeria, Poland,
Australia), half with a country or currency cue nearby and half without. Card numbers have each
brand's real prefixes, lengths and print groupings, and a valid Luhn check digit.
"""

from __future__ import annotations

import random

import carriers as cr
import corpus_values as cv

# ----------------------------------------------------------------------------- SSN


def ssn(rng: random.Random) -> str:
    while True:
        area = rng.randint(1, 899)
        if area == 666:
            continue
        s = f"{area:03d}{rng.randint(1, 99):02d}{rng.randint(1, 9999):04d}"
        if s not in {"078051120", "219099999", "123456789"}:
            return s


SSN_PROSE = [
    "For the W-9 my SSN is {s}, employer EIN is on the attached form.",
    "SSN {s} - please re-run the background check, the first one timed out.",
    "Applicant social security number: {s}. Start date confirmed for next month.",
    "ssn# {s} (member since 2019)",
    "Tax ID (SSN) {s}, filing status single.",
    "Can you check whether {s} is the SSN we have on file for the account?",
]
SSN_KEYS = ["ssn", "social_security_number", "SSN", "tin", "ssn_last_full", "taxpayer_id"]


def gen_ssn(c, n: int = 32) -> None:
    rng = c.rng
    for i in range(n):
        s = ssn(rng)
        ctx = cr.context(rng)
        keep = [v for _, v in ctx]
        if i % 3 == 0:
            carrier = rng.choice(cr.TEXT_PROSE)
            body = cr.render(rng, carrier, [], ctx, SSN_PROSE[(i // 3) % len(SSN_PROSE)].format(s=s))
            c.add("ssn", carrier, body, [s], [], keep, country="US", digits=s, variant="prose")
        else:
            carrier = cr.STRUCTURED[i % len(cr.STRUCTURED)]
            key = SSN_KEYS[i % len(SSN_KEYS)]
            as_int = carrier in ("tool_call_args", "tool_result") and i % 2 == 0 and s[0] != "0"
            value: object = int(s) if as_int else s
            body = cr.render(
                rng, carrier, [(key, value), ("state", rng.choice(["OH", "TX", "NY", "WA"]))], ctx
            )
            c.add("ssn", carrier, body, [s], [], keep, country="US", digits=s, key=key,
                  variant="json_int" if as_int else "key")  # fmt: skip


# ----------------------------------------------------------------------------- phones


def phone(rng: random.Random, kind: str) -> str:
    d = lambda n: cr.digits(rng, n)  # noqa: E731
    sep = rng.choice([" ", "", "-"]) if kind in ("ng", "pl_mobile") else " "
    if kind == "uk_mobile":
        return rng.choice([f"07{rng.randint(4, 9)}{d(2)} {d(6)}", f"07{rng.randint(4, 9)}{d(2)} {d(3)} {d(3)}",
                           f"07{rng.randint(4, 9)}{d(8)}"])  # fmt: skip
    if kind == "uk_london":
        return rng.choice(
            [f"020 {rng.choice('378')}{d(3)} {d(4)}", f"(020) {rng.choice('378')}{d(3)} {d(4)}"]
        )
    if kind == "ng":
        p = rng.choice(["0803", "0806", "0813", "0816", "0703", "0705", "0802", "0808", "0905", "0812"])
        return f"{p}{sep}{d(3)}{sep}{d(4)}"
    if kind == "pl_mobile":
        p = rng.choice(["501", "512", "533", "601", "664", "695", "721", "788", "797", "883"])
        return f"{p}{sep}{d(3)}{sep}{d(3)}"
    if kind == "pl_landline":
        return f"{rng.choice(['22', '12', '58', '61', '71'])} {d(3)} {d(2)} {d(2)}"
    if kind == "au_mobile":
        return rng.choice([f"04{d(2)} {d(3)} {d(3)}", f"04{d(8)}"])
    if kind == "au_landline":
        return rng.choice([f"(0{rng.choice('2378')}) {rng.randint(5, 9)}{d(3)} {d(4)}",
                           f"0{rng.choice('2378')} {rng.randint(5, 9)}{d(3)} {d(4)}"])  # fmt: skip
    raise ValueError(kind)


PHONE_KINDS = [("uk_mobile", "GB"), ("uk_london", "GB"), ("ng", "NG"), ("pl_mobile", "PL"), ("ng", "NG"),
               ("pl_landline", "PL"), ("au_mobile", "AU"), ("au_landline", "AU")]  # fmt: skip
PHONE_CUED = {
    "GB": ["The courier quoted £14.50 for the London pickup; ring me on {p} when outside.",
           "UK office (Manchester): {p}, ask for accounts."],
    "NG": ["Balance of ₦45,000 paid. Call me on {p} when the driver reaches Lagos.",
           "Abeg send the invoice, my line na {p} (Abuja office)."],
    "PL": ["Kwota 250 zł do zapłaty, proszę dzwonić pod {p} w sprawie dostawy do Warszawy.",
           "Biuro w Krakowie, tel. {p}."],
    "AU": ["Quote was A$180 incl. GST; best number for the Sydney install is {p}.",
           "Melbourne store contact: {p}, open till 5."],
}  # fmt: skip
PHONE_BARE = [
    "You can reach me on {p} after six.",
    "Call back number: {p}",
    "Phone: {p} - text first, I screen unknown calls.",
    "if the door code doesn't work try {p}",
]
PHONE_KEYS = ["phone", "mobile", "tel", "contact_number", "telefon", "phone_number"]


def gen_phone(c, n: int = 36) -> None:
    rng = c.rng
    for i in range(n):
        kind, cc = PHONE_KINDS[i % len(PHONE_KINDS)]
        p = phone(rng, kind)
        cued = (i // len(PHONE_KINDS)) % 2 == 0
        ctx = cr.context(rng)
        keep = [v for _, v in ctx]
        extra = {
            "country": cc,
            "cue": cued,
            "format": kind,
            "digits": "".join(ch for ch in p if ch.isdigit()),
        }
        if i % 3 != 2:
            carrier = cr.TEXT_PROSE[i % 2]
            tpl = rng.choice(PHONE_CUED[cc] if cued else PHONE_BARE)
            c.add("phone", carrier, cr.render(rng, carrier, [], ctx, tpl.format(p=p)), [p], [], keep, **extra)
        else:
            carrier = cr.STRUCTURED[i % len(cr.STRUCTURED)]
            fields: list[tuple[str, object]] = [(rng.choice(PHONE_KEYS), p)]
            if cued:
                fields.append(
                    ("city", {"GB": "Leeds", "NG": "Port Harcourt", "PL": "Gdańsk", "AU": "Perth"}[cc])
                )
            c.add("phone", carrier, cr.render(rng, carrier, fields, ctx), [p], [], keep, **extra)


# ----------------------------------------------------------------------------- cards

BRANDS = {  # brand: (prefix choices, length, grouping)
    "visa16": (["4"], 16, (4, 4, 4, 4)),
    "visa19": (["4"], 19, (4, 4, 4, 4, 3)),
    "mastercard": (["51", "52", "53", "54", "55", "2221", "2300", "2510", "2720"], 16, (4, 4, 4, 4)),
    "amex": (["34", "37"], 15, (4, 6, 5)),
    "diners": (["300", "302", "305", "36", "38"], 14, (4, 6, 4)),
    "discover": (["6011", "644", "647", "649", "65"], 16, (4, 4, 4, 4)),
    "jcb": (["3528", "3540", "3566", "3589"], 16, (4, 4, 4, 4)),
    "unionpay16": (["62"], 16, (4, 4, 4, 4)),
    "unionpay19": (["62"], 19, (6, 13)),
}


def card(rng: random.Random, brand: str) -> tuple[str, str]:
    """(digits, printed form) for one brand."""
    prefixes, length, groups = BRANDS[brand]
    body = rng.choice(prefixes)
    body += cr.digits(rng, length - 1 - len(body))
    num = body + cv.luhn_check_digit(body)
    assert cv.luhn_ok(num) and len(num) == length
    style = rng.choice([" ", " ", "-", ""])
    parts, at = [], 0
    for g in groups:
        parts.append(num[at : at + g])
        at += g
    return num, style.join(parts)


CARD_PROSE = [
    "Please charge the deposit to my card {c}, exp {e}, I'll give the CVC on the phone.",
    "Card on file is {c} - it was declined yesterday, can you retry?",
    "Use {c} for the renewal (expires {e}).",
    "Corporate card: {c}. Billing contact is the finance desk.",
]
CARD_KEYS = ["card_number", "pan", "cc_number", "payment_card", "cardNumber", "number"]


def gen_card(c, n: int = 36) -> None:
    rng = c.rng
    brands = list(BRANDS)
    for i in range(n):
        brand = brands[i % len(brands)]
        num, printed = card(rng, brand)
        exp = f"{rng.randint(1, 12):02d}/{rng.randint(27, 31)}"
        ctx = cr.context(rng)
        keep = [v for _, v in ctx]
        extra = {"brand": brand, "digits": num, "length": len(num)}
        if i % 2 == 0:
            carrier = cr.TEXT_PROSE[(i // 2) % 2]
            body = cr.render(rng, carrier, [], ctx, rng.choice(CARD_PROSE).format(c=printed, e=exp))
            c.add("card", carrier, body, [printed], [], keep, **extra)
        else:
            carrier = cr.STRUCTURED[(i // 2) % len(cr.STRUCTURED)]
            as_int = carrier == "tool_call_args" and i % 4 == 1
            value: object = int(num) if as_int else printed
            fields = [
                (CARD_KEYS[i % len(CARD_KEYS)], value),
                ("amount", f"{rng.randint(5, 900)}.{cr.digits(rng, 2)}"),
            ]
            keep.append(fields[1][1])
            c.add("card", carrier, cr.render(rng, carrier, fields, ctx), [num if as_int else printed], [], keep,
                  **extra, variant="json_int" if as_int else "key")  # fmt: skip
