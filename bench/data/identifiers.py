"""Valid identifiers for the redaction evaluation set, from a seeded ``random.Random``.

Every value is valid by the rules a real one obeys: phone numbers pass libphonenumber's
``is_valid_number`` (US and 20 other regions, international and national formats), cards have a real
issuer prefix and length and pass Luhn (Visa, Mastercard 51-55 and 2221-2720, Amex, Discover), IBANs
have correct mod-97 check digits, SSNs are in issued ranges (no 000/666/9xx area, 00 group, 0000
serial, no published samples). Secrets have the shape their issuer gives them. Each generator returns
``(value, variant)`` where variant names the sub-kind (``visa``, ``phone_intl`` ...) for per-variant recall.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import random
import string

import phonenumbers as pn

ALNUM = string.ascii_letters + string.digits
FIRST = ["james", "maria", "wei", "fatima", "olga", "raj", "emma", "lucas", "aiko", "kwame", "sofia", "noah"]
LAST = ["smith", "garcia", "chen", "khan", "ivanova", "patel", "muller", "rossi", "tanaka", "mensah", "silva"]
DOMAINS = ["example.com", "corp.io", "mail.co.uk", "uni-bonn.de", "gmail.com", "acme-labs.org", "xn--bcher-kva.ch",
           "sub.example.net", "startup.ai", "health.gov.au"]  # fmt: skip
INTL_REGIONS = ["GB", "DE", "FR", "IN", "BR", "JP", "AU", "ES", "IT", "NL", "MX", "ZA", "SG", "CA", "IE", "SE",
                "CH", "KR", "NG", "PL"]  # fmt: skip


def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _mixed(rng: random.Random, alphabet: str, n: int) -> str:
    """Random string that has upper, lower and digit (as real keys practically always do)."""
    while True:
        s = _rand(rng, alphabet, n)
        if any(c.isupper() for c in s) and any(c.islower() for c in s) and any(c.isdigit() for c in s):
            return s


def email(rng: random.Random) -> tuple[str, str]:
    f, last = rng.choice(FIRST), rng.choice(LAST)
    local = rng.choice([f"{f}.{last}", f"{f[0]}{last}", f"{f}_{last}+{rng.choice(['work', 'news'])}",
                        f"{f}.{last}{rng.randint(1, 99)}", f"{f.capitalize()}.{last.capitalize()}"])  # fmt: skip
    return f"{local}@{rng.choice(DOMAINS)}", "email"


def _valid_number(rng: random.Random, region: str) -> pn.PhoneNumber:
    kind = rng.choice([pn.PhoneNumberType.MOBILE, pn.PhoneNumberType.FIXED_LINE])
    example = pn.example_number_for_type(region, kind) or pn.example_number(region)
    nsn = str(example.national_number)
    for _ in range(200):
        k = min(len(nsn) - 2, 6)
        candidate = nsn[:-k] + _rand(rng, string.digits, k)
        num = pn.parse("+" + str(example.country_code) + candidate)
        if pn.is_valid_number(num):
            return num
    return example


def phone_us(rng: random.Random) -> tuple[str, str]:
    while True:
        area = f"{rng.randint(2, 9)}{rng.randint(0, 9)}{rng.randint(0, 9)}"
        exch = f"{rng.randint(2, 9)}{rng.randint(0, 9)}{rng.randint(0, 9)}"
        line = f"{rng.randint(0, 9999):04d}"
        num = pn.parse(f"+1{area}{exch}{line}")
        if pn.is_valid_number(num) and pn.region_code_for_number(num) == "US":
            break
    fmt = rng.choice([f"({area}) {exch}-{line}", f"{area}-{exch}-{line}", f"{area}.{exch}.{line}",
                      f"+1 {area} {exch} {line}", f"+1-{area}-{exch}-{line}", f"+1{area}{exch}{line}",
                      f"1-{area}-{exch}-{line}"])  # fmt: skip
    return fmt, "phone_us"


def phone_intl(rng: random.Random) -> tuple[str, str]:
    region = rng.choice(INTL_REGIONS)
    num = _valid_number(rng, region)
    if region == "GB" and rng.random() < 0.3:
        return pn.format_number(num, pn.PhoneNumberFormat.NATIONAL), "phone_gb_national"
    fmt = rng.choice([pn.PhoneNumberFormat.INTERNATIONAL, pn.PhoneNumberFormat.E164])
    return pn.format_number(num, fmt), "phone_intl"


def _luhn_complete(prefix: str, length: int, rng: random.Random) -> str:
    body = prefix + _rand(rng, string.digits, length - len(prefix) - 1)
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return body + str((10 - total % 10) % 10)


def card(rng: random.Random) -> tuple[str, str]:
    brand = rng.choice(["visa", "mastercard", "mastercard_2series", "amex", "discover"])
    if brand == "visa":
        digits = _luhn_complete("4", 16, rng)
    elif brand == "mastercard":
        digits = _luhn_complete(str(rng.randint(51, 55)), 16, rng)
    elif brand == "mastercard_2series":
        digits = _luhn_complete(str(rng.randint(2221, 2720)), 16, rng)
    elif brand == "amex":
        digits = _luhn_complete(rng.choice(["34", "37"]), 15, rng)
    else:
        digits = _luhn_complete("6011", 16, rng)
    sep = rng.choice(["", " ", "-"])
    if len(digits) == 15:
        groups = [digits[:4], digits[4:10], digits[10:]]
    else:
        groups = [digits[i : i + 4] for i in range(0, 16, 4)]
    return sep.join(groups), brand


# country: (length, builder of the BBAN)
_IBAN = {
    "DE": lambda r: _rand(r, string.digits, 18),
    "GB": lambda r: _rand(r, string.ascii_uppercase, 4) + _rand(r, string.digits, 14),
    "FR": lambda r: _rand(r, string.digits, 10) + _rand(r, string.ascii_uppercase + string.digits, 11) + _rand(r, string.digits, 2),
    "ES": lambda r: _rand(r, string.digits, 20),
    "NL": lambda r: _rand(r, string.ascii_uppercase, 4) + _rand(r, string.digits, 10),
    "IT": lambda r: _rand(r, string.ascii_uppercase, 1) + _rand(r, string.digits, 10) + _rand(r, string.digits, 12),
    "CH": lambda r: _rand(r, string.digits, 17),
    "BE": lambda r: _rand(r, string.digits, 12),
}  # fmt: skip


def iban_check_digits(country: str, bban: str) -> str:
    rearranged = bban + country + "00"
    numeric = "".join(str(int(c, 36)) for c in rearranged)
    return f"{98 - int(numeric) % 97:02d}"


def iban(rng: random.Random) -> tuple[str, str]:
    country = rng.choice(list(_IBAN))
    bban = _IBAN[country](rng)
    value = country + iban_check_digits(country, bban) + bban
    if rng.random() < 0.5:
        value = " ".join(value[i : i + 4] for i in range(0, len(value), 4))
    return value, f"iban_{country.lower()}"


def ipv4(rng: random.Random) -> tuple[str, str]:
    return f"{rng.randint(1, 223)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}", "ipv4"


def ipv6(rng: random.Random) -> tuple[str, str]:
    addr = ipaddress.IPv6Address(rng.getrandbits(128) | (0x2001 << 112))
    if rng.random() < 0.5:
        # a typical allocation: zeros in the middle that compress to ::
        addr = ipaddress.IPv6Address((rng.getrandbits(48) << 80) | rng.getrandbits(16) | (0x2001 << 112))
    return (addr.compressed if rng.random() < 0.7 else addr.exploded), "ipv6"


def ssn(rng: random.Random) -> tuple[str, str]:
    while True:
        area = rng.randint(1, 899)
        if area != 666:
            break
    group, serial = rng.randint(1, 99), rng.randint(1, 9999)
    sep = rng.choice(["-", "-", "-", " "])
    return f"{area:03d}{sep}{group:02d}{sep}{serial:04d}", "ssn"


def openai_key(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.7:
        return "sk-proj-" + _mixed(rng, ALNUM + "-_", 156), "openai_project"
    return "sk-" + _mixed(rng, ALNUM, 48), "openai_legacy"


def anthropic_key(rng: random.Random) -> tuple[str, str]:
    return "sk-ant-api03-" + _mixed(rng, ALNUM + "-_", 93) + "AA", "anthropic"


def aws_access_key_id(rng: random.Random) -> tuple[str, str]:
    return rng.choice(["AKIA", "ASIA"]) + _rand(
        rng, string.ascii_uppercase + "234567", 16
    ), "aws_access_key_id"


def aws_secret_access_key(rng: random.Random) -> tuple[str, str]:
    return _mixed(rng, ALNUM + "/+", 40), "aws_secret_access_key"


def github_token(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.7:
        return rng.choice(["ghp_", "gho_", "ghs_"]) + _mixed(rng, ALNUM, 36), "github_classic"
    return "github_pat_" + _mixed(rng, ALNUM, 22) + "_" + _mixed(rng, ALNUM, 59), "github_fine_grained"


def slack_token(rng: random.Random) -> tuple[str, str]:
    kind = rng.choice("bpars")
    return f"xox{kind}-{rng.randint(10**11, 10**12 - 1)}-{rng.randint(10**12, 10**13 - 1)}-" + _mixed(
        rng, ALNUM, 24
    ), "slack"


def stripe_key(rng: random.Random) -> tuple[str, str]:
    return rng.choice(["sk_live_", "rk_live_", "sk_test_"]) + _mixed(rng, ALNUM, 99), "stripe"


def google_api_key(rng: random.Random) -> tuple[str, str]:
    return "AIza" + _mixed(rng, ALNUM + "-_", 35), "google"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(rng: random.Random) -> tuple[str, str]:
    header = {"alg": rng.choice(["HS256", "RS256", "ES256"]), "typ": "JWT"}
    payload = {
        "sub": str(rng.randint(1, 10**9)),
        "iat": 1700000000 + rng.randint(0, 10**7),
        "scope": "read write",
    }
    sig = _b64url(rng.randbytes(32 if header["alg"] == "HS256" else 256))
    return f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(payload).encode())}.{sig}", "jwt"


def private_key(rng: random.Random) -> tuple[str, str]:
    kind = rng.choice(["RSA ", "EC ", "OPENSSH ", ""])
    body = base64.b64encode(rng.randbytes(rng.choice([120, 240, 600]))).decode()
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    return f"-----BEGIN {kind}PRIVATE KEY-----\n{lines}\n-----END {kind}PRIVATE KEY-----", "pem"


def url_password(rng: random.Random) -> tuple[str, str, str]:
    """Returns (url, password, variant): the password is the labelled part."""
    password = _mixed(rng, ALNUM + "!$*-_.~", rng.randint(8, 24))
    scheme = rng.choice(["postgres", "postgresql", "mysql", "mongodb+srv", "redis", "amqp", "https"])
    host = rng.choice(["db.internal", "pg-primary.prod.svc", "cluster0.ab1cd.mongodb.net", "mq.example.com"])
    user = rng.choice(["app", "admin", "svc_etl", "deploy"])
    return f"{scheme}://{user}:{password}@{host}:{rng.randint(1000, 9999)}/prod", password, "url_password"


def password(rng: random.Random) -> tuple[str, str]:
    return _mixed(rng, ALNUM + "!@#$%^&*", rng.randint(8, 20)), "password"


GENERATORS = {
    "EMAIL_ADDRESS": [email],
    "PHONE_NUMBER": [phone_us, phone_intl],
    "CREDIT_CARD": [card],
    "IBAN_CODE": [iban],
    "IP_ADDRESS": [ipv4, ipv6],
    "US_SSN": [ssn],
    "OPENAI_API_KEY": [openai_key],
    "ANTHROPIC_API_KEY": [anthropic_key],
    "AWS_ACCESS_KEY_ID": [aws_access_key_id],
    "AWS_SECRET_ACCESS_KEY": [aws_secret_access_key],
    "GITHUB_TOKEN": [github_token],
    "SLACK_TOKEN": [slack_token],
    "STRIPE_KEY": [stripe_key],
    "GOOGLE_API_KEY": [google_api_key],
    "JWT": [jwt],
    "PRIVATE_KEY": [private_key],
}
