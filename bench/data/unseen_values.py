"""Value generators for the independent redaction evaluation set, written from providers' documented formats.

Each generator returns one planted value of its kind, drawn with ``rng``. The formats come from the
issuers' own documentation (AWS IAM identifier prefixes, GitHub token prefixes, Slack token types,
Stripe key prefixes, card brand IIN ranges, ITU/NANP and national numbering plans, ISO 13616 IBANs),
not from the recognizers under test: the set exists to measure redaction on data it was not written
against. Person names come from small per-locale lists (given names and family names drawn apart, so
full names do not repeat). ``CLEAN_*`` helpers make near-miss values that must not be redacted.
"""

from __future__ import annotations

import base64
import hashlib
import random
import string
import uuid
from collections.abc import Callable

B32 = string.ascii_uppercase + "234567"
ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"


def _pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _luhn_complete(rng: random.Random, prefix: str, length: int) -> str:
    body = prefix + _pick(rng, string.digits, length - len(prefix) - 1)
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d = d * 2 - 9 if d * 2 > 9 else d * 2
        total += d
    return body + str((10 - total % 10) % 10)


# ----------------------------------------------------------------------------- secrets

AWS_ID_PREFIXES = ("AKIA", "ASIA", "AIDA", "AROA", "AGPA", "ANPA", "ANVA", "AIPA", "APKA", "ABIA", "ACCA")


def aws_access_key_id(rng: random.Random) -> str:
    """IAM unique ids: a four-letter resource prefix and 16 base32 characters (AKIA = long-term key)."""
    prefix = "AKIA" if rng.random() < 0.6 else ("ASIA" if rng.random() < 0.5 else rng.choice(AWS_ID_PREFIXES))
    return prefix + _pick(rng, B32, 16)


def aws_secret_access_key(rng: random.Random) -> str:
    return _pick(rng, ALNUM + "/+", 40)


def openai_api_key(rng: random.Random) -> str:
    style = rng.randrange(4)
    if style == 0:  # legacy user key
        return "sk-" + _pick(rng, ALNUM, 20) + "T3BlbkFJ" + _pick(rng, ALNUM, 20)
    if style == 1:
        return "sk-proj-" + _pick(rng, URLSAFE, rng.choice((48, 74, 120, 156)))
    if style == 2:
        return "sk-svcacct-" + _pick(rng, URLSAFE, 90)
    return "sk-admin-" + _pick(rng, URLSAFE, 60)


def anthropic_api_key(rng: random.Random) -> str:
    kind = rng.choice(("api03", "api03", "admin01"))
    return f"sk-ant-{kind}-" + _pick(rng, URLSAFE, 93) + "AA"


def github_token(rng: random.Random) -> str:
    if rng.random() < 0.25:
        return "github_pat_" + _pick(rng, ALNUM, 22) + "_" + _pick(rng, ALNUM, 59)
    return rng.choice(("ghp_", "gho_", "ghu_", "ghs_", "ghr_")) + _pick(rng, ALNUM, 36)


def slack_token(rng: random.Random) -> str:
    kind = rng.randrange(4)
    if kind == 0:
        return f"xoxb-{rng.randint(10**10, 10**12)}-{rng.randint(10**10, 10**12)}-{_pick(rng, ALNUM, 24)}"
    if kind == 1:
        return f"xoxp-{rng.randint(10**10, 10**12)}-{rng.randint(10**10, 10**12)}-{rng.randint(10**10, 10**12)}-{_pick(rng, HEX, 32)}"
    if kind == 2:
        return f"xapp-1-A{_pick(rng, B32, 10)}-{rng.randint(10**12, 10**13)}-{_pick(rng, HEX, 64)}"
    return f"https://hooks.slack.com/services/T{_pick(rng, B32, 8)}/B{_pick(rng, B32, 10)}/{_pick(rng, ALNUM, 24)}"


def stripe_key(rng: random.Random) -> str:
    prefix = rng.choice(("sk_live_", "rk_live_", "sk_test_", "rk_test_", "whsec_"))
    return prefix + _pick(rng, ALNUM, rng.choice((24, 32, 99)))


def google_api_key(rng: random.Random) -> str:
    return "AIza" + _pick(rng, URLSAFE, 35)


def jwt(rng: random.Random) -> str:
    def b64(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    alg = rng.choice(("HS256", "RS256", "ES256"))
    header = b64(f'{{"alg":"{alg}","typ":"JWT"}}'.encode())
    payload = b64(
        f'{{"sub":"{rng.randint(1, 10**9)}","iat":{rng.randint(1.6e9, 1.8e9)},"scope":"read"}}'.encode()
    )
    return f"{header}.{payload}.{b64(rng.randbytes(32 if alg == 'HS256' else 64))}"


def private_key_body(rng: random.Random) -> str:
    """A PEM private key block (RSA, EC, PKCS#8 or OpenSSH)."""
    label = rng.choice(
        ("RSA PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY", "OPENSSH PRIVATE KEY", "ENCRYPTED PRIVATE KEY")
    )
    body = base64.b64encode(rng.randbytes(rng.choice((120, 240)))).decode()
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    return f"-----BEGIN {label}-----\n{lines}\n-----END {label}-----"


def other_vendor_token(rng: random.Random) -> str:
    """Vendor tokens of kinds beyond the usual list: Hugging Face, GitLab, npm, SendGrid, Twilio, Mailgun, PyPI."""
    kind = rng.randrange(7)
    return (
        "hf_" + _pick(rng, ALNUM, 34),
        "glpat-" + _pick(rng, URLSAFE, 20),
        "npm_" + _pick(rng, ALNUM, 36),
        "SG." + _pick(rng, URLSAFE, 22) + "." + _pick(rng, URLSAFE, 43),
        "SK" + _pick(rng, HEX, 32),
        "key-" + _pick(rng, HEX, 32),
        "pypi-AgEIcHlwaS5vcmc" + _pick(rng, URLSAFE, 60),
    )[kind]


def password(rng: random.Random) -> str:
    """A human- or machine-chosen password: words and digits, or random printable characters."""
    if rng.random() < 0.4:
        word = rng.choice(("Summer", "Falcon", "orange", "Tr0ub4dor", "Winter", "kangaroo", "Blue", "Moneta"))
        return (
            f"{word}{rng.choice(('!', '#', '@', '_', ''))}{rng.randint(1, 9999)}{rng.choice(('', '$', '?'))}"
        )
    return _pick(rng, ALNUM + "!#%^*-_+=~", rng.randint(12, 28))


def hex_secret(rng: random.Random) -> str:
    return _pick(rng, HEX, rng.choice((32, 40, 64)))


def base64_secret(rng: random.Random) -> str:
    return base64.b64encode(rng.randbytes(rng.choice((24, 32, 48, 64)))).decode()


# ----------------------------------------------------------------------------- PII


def email(rng: random.Random, first: str = "", last: str = "") -> str:
    first = first or rng.choice(("maria", "j", "chen", "olu", "sven", "ana", "ravi", "kim"))
    last = last or rng.choice(("lopez", "okafor", "m", "ng", "berg", "silva", "iyer", "tanaka"))
    local = rng.choice((f"{first}.{last}", f"{first}{last[:1]}", f"{first}+{rng.choice(('billing', 'test', 'x'))}",
                        f"{last}_{first}{rng.randint(1, 99)}", f"{first[:1]}{last}"))  # fmt: skip
    domain = rng.choice(("gmail.com", "outlook.de", "yahoo.co.jp", "mail.ru", "acme-corp.io", "uni-heidelberg.de",
                         "orange.fr", "correo.es", "bigpond.com.au", "protonmail.ch", "sub.dept.example.org"))  # fmt: skip
    return f"{local}@{domain}".lower()


def us_phone(rng: random.Random) -> str:
    """NANP-shaped numbers, including area codes a validator rejects: unassigned, 1XX/0XX, N11, Caribbean."""
    area = rng.choice((f"{rng.randint(2, 9)}{rng.randint(0, 9)}{rng.randint(0, 9)}", f"1{rng.randint(0, 9)}{rng.randint(0, 9)}",
                       f"{rng.randint(2, 9)}11", rng.choice(("809", "876", "868", "246", "441", "284", "345")),
                       rng.choice(("212", "415", "312", "617", "206")), f"0{rng.randint(0, 9)}{rng.randint(0, 9)}"))  # fmt: skip
    exch = rng.choice(("555", f"{rng.randint(2, 9)}{rng.randint(0, 9)}{rng.randint(0, 9)}"))
    line = (
        f"01{rng.randint(0, 9)}{rng.randint(0, 9)}"
        if exch == "555" and rng.random() < 0.7
        else f"{rng.randint(0, 9999):04d}"
    )
    fmt = rng.randrange(7)
    return (f"({area}) {exch}-{line}", f"{area}-{exch}-{line}", f"{area}.{exch}.{line}", f"+1 {area} {exch} {line}",
            f"1-{area}-{exch}-{line}", f"+1 ({area}) {exch}-{line}", f"({area}){exch}-{line}")[fmt]  # fmt: skip


def intl_phone(rng: random.Random) -> str:
    """National and international formats of UK, DE, FR, JP, IN, BR, AU, ES, IT, NL numbers."""
    d = lambda n: _pick(rng, string.digits, n)  # noqa: E731
    return rng.choice((
        f"+44 20 7946 0{d(3)}", f"07700 900{d(3)}", f"+44 7700 900{d(3)}", f"020 7946 0{d(3)}",
        f"+49 30 {d(8)}", f"030 {d(7)}", f"+49 151 {d(8)}", f"0171 {d(7)}",
        f"+33 1 {d(2)} {d(2)} {d(2)} {d(2)}", f"06 {d(2)} {d(2)} {d(2)} {d(2)}",
        f"03-{d(4)}-{d(4)}", f"+81 90-{d(4)}-{d(4)}", f"090-{d(4)}-{d(4)}",
        f"+91 98{d(3)} {d(5)}", f"098{d(2)} {d(5)}",
        f"+55 11 9{d(4)}-{d(4)}", f"(11) 9{d(4)}-{d(4)}",
        f"+61 2 {d(4)} {d(4)}", f"04{d(2)} {d(3)} {d(3)}",
        f"+34 6{d(2)} {d(3)} {d(3)}", f"+39 06 {d(4)} {d(4)}", f"+31 6 {d(8)}",
    ))  # fmt: skip


CARD_BRANDS: dict[str, tuple[tuple[str, ...], tuple[int, ...]]] = {
    "visa": (("4",), (16, 13, 19)),
    "mastercard_5": (("51", "52", "53", "54", "55"), (16,)),
    "mastercard_2": (tuple(str(p) for p in (2221, 2300, 2411, 2500, 2633, 2720)), (16,)),
    "amex": (("34", "37"), (15,)),
    "discover": (("6011", "644", "65"), (16, 19)),
    "jcb": (("3528", "3540", "3589"), (16,)),
    "diners": (("36", "300", "305", "38"), (14,)),
    "unionpay": (("62",), (16, 17, 18, 19)),
    "maestro": (("6759", "5018", "5020", "6304"), (12, 13, 15, 19)),
    "brand_length_invalid": (("4", "51", "9", "1", "7", "34"), (15, 17, 16, 18)),
}


def card_number(rng: random.Random) -> tuple[str, str]:
    """(brand, number as written): Luhn-valid, grouped 4-4-4-4, 4-6-5 (Amex), dashes, or unbroken."""
    brand = rng.choice(list(CARD_BRANDS))
    prefixes, lengths = CARD_BRANDS[brand]
    length = rng.choice(lengths)
    if brand == "brand_length_invalid":
        length = rng.choice((15, 16, 17, 18)) if rng.random() < 0.5 else 15
    number = _luhn_complete(rng, rng.choice(prefixes), max(length, 13))
    style = rng.randrange(3)
    if style == 0:
        return brand, number
    sep = " " if style == 1 else "-"
    if brand == "amex" and len(number) == 15:
        return brand, sep.join((number[:4], number[4:10], number[10:]))
    return brand, sep.join(number[i : i + 4] for i in range(0, len(number), 4))


def iban(rng: random.Random) -> str:
    """ISO 13616 IBANs (mod-97 check digits) for DE, GB, FR, ES, NL, IT, CH, PL; printed or electronic form."""
    country, bban = rng.choice((
        ("DE", _pick(rng, string.digits, 18)), ("GB", "NWBK" + _pick(rng, string.digits, 14)),
        ("FR", _pick(rng, string.digits, 10) + _pick(rng, string.ascii_uppercase + string.digits, 11) + _pick(rng, string.digits, 2)),
        ("ES", _pick(rng, string.digits, 20)), ("NL", "ABNA" + _pick(rng, string.digits, 10)),
        ("IT", "X" + _pick(rng, string.digits, 10) + _pick(rng, string.digits, 12)),
        ("CH", _pick(rng, string.digits, 17)), ("PL", _pick(rng, string.digits, 24)),
    ))  # fmt: skip
    rearranged = bban + country + "00"
    num = int("".join(str(int(c, 36)) for c in rearranged))
    value = f"{country}{98 - num % 97:02d}{bban}"
    if rng.random() < 0.5:
        value = " ".join(value[i : i + 4] for i in range(0, len(value), 4))
    return value


def ip_address(rng: random.Random) -> str:
    if rng.random() < 0.7:
        return ".".join(str(rng.randint(1, 254)) for _ in range(4))
    groups = [f"{rng.randint(0, 0xFFFF):x}" for _ in range(8)]
    if rng.random() < 0.5:
        return f"2001:db8:{groups[2]}:{groups[3]}::{groups[7]}"
    return ":".join(groups)


def us_ssn(rng: random.Random) -> str:
    area = rng.choice([a for a in range(1, 900) if a != 666])
    value = f"{area:03d}-{rng.randint(1, 99):02d}-{rng.randint(1, 9999):04d}"
    return value if rng.random() < 0.8 else value.replace("-", " ")


# ----------------------------------------------------------------------------- person names

NAMES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "en_US": (("Jennifer", "Marcus", "Brittany", "Tyrone", "Kayla", "Dwight", "Megan", "Cody"),
              ("Whitaker", "Holloway", "Brennan", "Castellano", "Pruitt", "McAllister", "Dunleavy", "Sorensen")),
    "de_DE": (("Jürgen", "Annegret", "Wolfgang", "Friederike", "Torsten", "Heike", "Lukas", "Sabine"),
              ("Schäfer", "Brinkmann", "Oberländer", "Kowalczyk", "Hoffmeister", "Lindqvist", "Vogelsang", "Wüst")),
    "fr_FR": (("Aurélie", "Benoît", "Margaux", "Thibault", "Élodie", "Grégoire", "Solène", "Mathis"),
              ("Lefebvre", "Duchêne", "Rousseau", "Marchetti", "Garnier", "Fontaine", "Bourdieu", "Chevalier")),
    "es_ES": (("Alejandro", "Lucía", "Íñigo", "Montserrat", "Rocío", "Joaquín", "Nerea", "Sergio"),
              ("García Márquez", "Fernández", "Etxeberria", "Villanueva", "Castaño", "Ibáñez", "Moreno", "Salazar")),
    "pt_BR": (("João", "Thaís", "Gustavo", "Letícia", "Rodrigo", "Beatriz", "Caio", "Larissa"),
              ("Gonçalves", "Albuquerque", "Nascimento", "Figueiredo", "Magalhães", "Carvalho", "Teixeira", "Barbosa")),
    "it_IT": (("Giuseppe", "Chiara", "Lorenzo", "Francesca", "Matteo", "Giulia", "Alessandro", "Martina"),
              ("Esposito", "Bianchi", "Colombo", "Ferraro", "Galli", "Mancini", "Lombardi", "Santoro")),
    "pl_PL": (("Agnieszka", "Krzysztof", "Małgorzata", "Wojciech", "Katarzyna", "Grzegorz", "Zofia", "Tomasz"),
              ("Wiśniewski", "Zieliński", "Szymańska", "Woźniak", "Kamińska", "Lewandowski", "Dąbrowski", "Jankowska")),
    "nl_NL": (("Sanne", "Joost", "Femke", "Bram", "Lieke", "Maarten", "Anouk", "Pieter"),
              ("van der Berg", "de Vries", "Bakker", "Visser", "Smit", "Meijer", "de Jong", "Mulder")),
    "tr_TR": (("Mehmet", "Ayşe", "Emre", "Zeynep", "Burak", "Elif", "Oğuz", "Selin"),
              ("Yılmaz", "Demir", "Şahin", "Çelik", "Aydın", "Öztürk", "Kaya", "Arslan")),
    "ja_JP": (("Haruto", "Yui", "Takeshi", "Aoi", "Kenji", "Sakura", "Ren", "Hinata"),
              ("Takahashi", "Watanabe", "Yamamoto", "Nakamura", "Kobayashi", "Fujiwara", "Matsumoto", "Inoue")),
    "zh_CN": (("Wei", "Xiaoming", "Li Na", "Jianguo", "Mei", "Haoran", "Yuxin", "Zhiwei"),
              ("Zhang", "Liu", "Huang", "Zhou", "Xu", "Guo", "Lin", "Zhao")),
    "ko_KR": (("Min-jun", "Seo-yeon", "Ji-hoon", "Ha-eun", "Do-yun", "Soo-ah", "Hyun-woo", "Ye-jin"),
              ("Kim", "Park", "Choi", "Jung", "Kang", "Yoon", "Jang", "Lim")),
    "hi_IN": (("Priya", "Arjun", "Ananya", "Vikram", "Lakshmi", "Rohan", "Deepika", "Sanjay"),
              ("Venkataraman", "Chatterjee", "Reddy", "Subramanian", "Banerjee", "Kulkarni", "Agarwal", "Nair")),
    "ar": (("Omar", "Fatima", "Youssef", "Layla", "Khalid", "Noor", "Hamza", "Amira"),
           ("Al-Mansouri", "Haddad", "El-Sayed", "Nasser", "Khoury", "Bakr", "Farouk", "Saleh")),
    "ru_RU": (("Dmitri", "Svetlana", "Aleksandr", "Natalia", "Sergei", "Yekaterina", "Mikhail", "Olga"),
              ("Volkov", "Kuznetsova", "Smirnov", "Popova", "Lebedev", "Sokolova", "Morozov", "Novikova")),
    "yo_NG": (("Chinedu", "Ngozi", "Oluwaseun", "Adaeze", "Emeka", "Funmilayo", "Tunde", "Chiamaka"),
              ("Okonkwo", "Adeyemi", "Nwosu", "Balogun", "Eze", "Okafor", "Olawale", "Uchenna")),
    "vi_VN": (("Nguyen Van", "Tran Thi", "Le Minh", "Pham Thu", "Hoang Duc", "Vu Thanh", "Dang Quoc", "Bui Lan"),
              ("Anh", "Huong", "Tuan", "Linh", "Nam", "Mai", "Khoa", "Thao")),
}  # fmt: skip


def person_name(rng: random.Random) -> tuple[str, str, str, str]:
    """(locale, full name, given name, family name); the full name is given + family (Western order)."""
    locale = rng.choice(list(NAMES))
    given, family = rng.choice(NAMES[locale][0]), rng.choice(NAMES[locale][1])
    return locale, f"{given} {family}", given, family


# ----------------------------------------------------------------------------- clean near-misses


def clean_values(rng: random.Random) -> dict[str, str]:
    """One of each near-miss shape: things a careless redactor tags and a careful one leaves alone."""
    d = lambda n: _pick(rng, string.digits, n)  # noqa: E731
    return {
        "order": f"ORD-{rng.randint(2019, 2026)}-{d(6)}",
        "invoice": f"INV{d(8)}",
        "uuid": str(uuid.UUID(int=rng.getrandbits(128))),
        "version": rng.choice(
            (
                f"v{rng.randint(0, 12)}.{rng.randint(0, 40)}.{rng.randint(0, 99)}",
                f"{rng.randint(1, 20)}.{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(1000, 9999)}",
                f"{rng.randint(1, 5)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}-rc{rng.randint(1, 4)}",
            )
        ),  # fmt: skip
        "timing": f"{rng.randint(1, 9999)}.{d(2)} ms",
        "duration": f"{rng.randint(1, 59)}m{rng.randint(0, 59)}s",
        "sha": hashlib.sha1(rng.randbytes(16)).hexdigest(),
        "digest": "sha256:" + hashlib.sha256(rng.randbytes(16)).hexdigest(),
        "epoch_ms": str(rng.randint(1_600_000_000_000, 1_800_000_000_000)),
        "build": f"build #{rng.randint(100, 99999)}",
        "port": str(rng.choice((5432, 6379, 8080, 9092, 27017, 443))),
        "sku": f"SKU-{_pick(rng, string.ascii_uppercase, 3)}-{d(5)}",
        "tracking": f"1Z{_pick(rng, string.ascii_uppercase + string.digits, 16)}",
        "ticket": f"{rng.choice(('JIRA', 'OPS', 'SEC', 'PLAT'))}-{rng.randint(10, 9999)}",
        "price": f"${rng.randint(1, 999)}.{d(2)}",
        "date": f"{rng.randint(2019, 2026)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        "product": rng.choice(
            (
                "Visual Studio Code",
                "Grafana",
                "Kubernetes",
                "PostgreSQL 16",
                "Apple Watch Ultra",
                "Tesla Model Y",
                "Jira Service Management",
                "Microsoft Teams",
                "Red Hat OpenShift",
                "Adobe Premiere Pro",
                "Amazon Redshift",
                "Ford Ranger",
                "Dell Latitude 7440",
                "Jenkins",
                "Ubuntu 24.04 LTS",
                "Raspberry Pi 5",
                "Nintendo Switch",
                "Kafka Connect",
                "Azure DevOps",
                "Google Pixel 9",
                "Samsung Galaxy S24",
                "Oracle Database 23ai",
            )
        ),  # fmt: skip
        "pod": f"api-{_pick(rng, 'abcdefghijklmnopqrstuvwxyz0123456789', 10)}-{_pick(rng, 'abcdefghijklmnopqrstuvwxyz0123456789', 5)}",
        "count": str(rng.randint(1000, 99_999_999)),
        "oid": f"1.3.6.1.4.1.{rng.randint(1000, 60000)}.{rng.randint(1, 9)}",
        "isbn": f"978-{rng.randint(0, 9)}-{d(3)}-{d(5)}-{rng.randint(0, 9)}",
        "bytes": f"{rng.randint(1, 4096)} MiB",
        "percent": f"{rng.randint(0, 100)}.{rng.randint(0, 9)}%",
    }


GENERATORS: dict[str, Callable[[random.Random], str]] = {
    "AWS_ACCESS_KEY_ID": aws_access_key_id,
    "AWS_SECRET_ACCESS_KEY": aws_secret_access_key,
    "OPENAI_API_KEY": openai_api_key,
    "ANTHROPIC_API_KEY": anthropic_api_key,
    "GITHUB_TOKEN": github_token,
    "SLACK_TOKEN": slack_token,
    "STRIPE_KEY": stripe_key,
    "GOOGLE_API_KEY": google_api_key,
    "JWT": jwt,
    "PRIVATE_KEY": private_key_body,
    "VENDOR_TOKEN": other_vendor_token,
    "PASSWORD": password,
    "HEX_SECRET": hex_secret,
    "BASE64_SECRET": base64_secret,
    "EMAIL_ADDRESS": email,
    "IBAN_CODE": iban,
    "IP_ADDRESS": ip_address,
    "US_SSN": us_ssn,
}
