"""Value lists and check-digit arithmetic for the personal-data evaluation corpus (stdlib only).

Names, streets and cities are written here by hand; numbers (cards, SSNs, passports, phones, ISBNs)
are drawn by ``make_corpus.py`` from the seeded generator and made valid with the functions below.
"""

from __future__ import annotations

import random
import unicodedata

# ----------------------------------------------------------------------------- check digits


def luhn_check_digit(body: str) -> str:
    """The digit that makes ``body + digit`` pass the Luhn test."""
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:  # doubled: these sit at odd positions once the check digit is appended
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return str((10 - total % 10) % 10)


def luhn_ok(number: str) -> bool:
    digits = [int(c) for c in number if c.isdigit()]
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def mrz_value(ch: str) -> int:
    if ch.isdigit():
        return int(ch)
    if ch == "<":
        return 0
    return ord(ch) - ord("A") + 10


def mrz_check(field: str) -> str:
    """ICAO 9303 check digit: weights 7, 3, 1 repeating, sum mod 10."""
    weights = (7, 3, 1)
    return str(sum(mrz_value(c) * weights[i % 3] for i, c in enumerate(field)) % 10)


def isbn13_check_digit(body12: str) -> str:
    total = sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(body12))
    return str((10 - total % 10) % 10)


def isbn13_ok(isbn: str) -> bool:
    d = [c for c in isbn if c.isdigit()]
    return len(d) == 13 and isbn13_check_digit("".join(d[:12])) == d[12]


# ----------------------------------------------------------------------------- MRZ (TD3)

_TRANSLIT = {"Ä": "AE", "Ö": "OE", "Ü": "UE", "ß": "SS", "Ł": "L", "Đ": "D", "Ø": "OE", "Æ": "AE"}


def mrz_name_part(text: str) -> str:
    """Upper-case Latin letters only, spaces and hyphens as ``<`` (ICAO 9303 transliteration, simplified)."""
    out = []
    for ch in text.upper():
        if ch in _TRANSLIT:
            out.append(_TRANSLIT[ch])
            continue
        base = unicodedata.normalize("NFKD", ch)[0]
        if "A" <= base <= "Z":
            out.append(base)
        elif ch in " -":
            out.append("<")
    return "".join(out)


def mrz_name_field(family: str, given: str) -> str:
    """``FAMILY<<GIVEN<NAMES`` as it appears in the zone, before padding."""
    return f"{mrz_name_part(family)}<<{mrz_name_part(given)}"


def td3(
    state: str, family: str, given: str, number: str, nationality: str, dob: str, sex: str, expiry: str
) -> tuple[str, str]:
    """The two 44-character lines of a passport's machine-readable zone; dates as YYMMDD."""
    line1 = f"P<{state}{mrz_name_field(family, given)}".ljust(44, "<")[:44]
    doc = number.ljust(9, "<")
    personal = "<" * 14
    parts = [doc + mrz_check(doc), dob + mrz_check(dob), expiry + mrz_check(expiry), personal + "<"]
    composite = mrz_check(parts[0] + parts[1] + parts[2] + parts[3])
    line2 = f"{parts[0]}{nationality}{parts[1]}{sex}{parts[2]}{parts[3]}{composite}"
    return line1, line2


def td3_ok(line1: str, line2: str) -> bool:
    """Re-reads a TD3 zone and verifies every check digit (independent of ``td3``)."""
    if len(line1) != 44 or len(line2) != 44 or not line1.startswith("P"):
        return False
    doc, dob, exp, pers = line2[0:9], line2[13:19], line2[21:27], line2[28:42]
    if mrz_check(doc) != line2[9] or mrz_check(dob) != line2[19] or mrz_check(exp) != line2[27]:
        return False
    if line2[42] not in ("<", mrz_check(pers)) and not (pers == "<" * 14 and line2[42] == "0"):
        return False
    composite = line2[0:10] + line2[13:20] + line2[21:43]
    return mrz_check(composite) == line2[43]


# ICAO 9303 Part 4, specimen zone (Anna Maria Eriksson): the arithmetic is tested against it.
ICAO_SPECIMEN = (
    "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<",
    "L898902C36UTO7408122F1204159ZE184226B<<<<<10",
)

# ----------------------------------------------------------------------------- names
# (culture, country, given, family, order, native full name or None)
# order: "gf" = given first when written in prose, "fg" = family first.

NAMES: list[tuple[str, str, str, str, str, str | None]] = [
    ("japanese", "JP", "Misaki", "Watanabe", "gf", "渡辺美咲"),
    ("japanese", "JP", "Haruto", "Kobayashi", "gf", "小林陽翔"),
    ("japanese", "JP", "Noriko", "Yamaguchi", "gf", "山口典子"),
    ("japanese", "JP", "Daichi", "Matsumoto", "gf", None),
    ("japanese", "JP", "Sakura", "Fujiwara", "gf", "藤原さくら"),
    ("japanese", "JP", "Takumi", "Shimizu", "gf", None),
    ("japanese", "JP", "Yui", "Okada", "gf", "岡田結衣"),
    ("vietnamese", "VN", "Thị Thu Hằng", "Nguyễn", "fg", None),
    ("vietnamese", "VN", "Văn Đức", "Trần", "fg", None),
    ("vietnamese", "VN", "Hoàng Minh Khôi", "Lê", "fg", None),
    ("vietnamese", "VN", "Ngọc Ánh", "Phạm", "fg", None),
    ("vietnamese", "VN", "Quốc Bảo", "Huỳnh", "fg", None),
    ("vietnamese", "VN", "Thị Kim Ngân", "Võ", "fg", None),
    ("vietnamese", "VN", "Hữu Phước", "Đặng", "fg", None),
    ("yoruba", "NG", "Adewale", "Ogunleye", "gf", None),
    ("yoruba", "NG", "Folasade", "Adeyemi-Bakare", "gf", None),
    ("yoruba", "NG", "Oluwatoyin", "Akinwande", "gf", None),
    ("yoruba", "NG", "Babatunde Oluwaseun", "Olaniyan", "gf", None),
    ("igbo", "NG", "Chukwuemeka", "Nwachukwu", "gf", None),
    ("igbo", "NG", "Chiamaka", "Okonkwo", "gf", None),
    ("igbo", "NG", "Ifeanyichukwu", "Ezeagu", "gf", None),
    ("igbo", "NG", "Nkechi Adaeze", "Onyekachi", "gf", None),
    ("hausa", "NG", "Abdullahi", "Danjuma", "gf", None),
    ("hausa", "NG", "Zainab Hauwa", "Lawal", "gf", None),
    ("hausa", "NG", "Usman Garba", "Yakubu", "gf", None),
    ("brazilian", "BR", "João Pedro", "Carvalho Lima", "gf", None),
    ("brazilian", "BR", "Maria Eduarda", "Souza Ribeiro", "gf", None),
    ("brazilian", "BR", "Luiz Felipe", "Moreira da Costa", "gf", None),
    ("brazilian", "BR", "Thaís", "Gonçalves Barbosa", "gf", None),
    ("brazilian", "BR", "Letícia Helena", "Almeida Teixeira", "gf", None),
    ("brazilian", "BR", "Caio Henrique", "Fonseca Mendes", "gf", None),
    ("brazilian", "BR", "Raimundo", "Nonato de Albuquerque", "gf", None),
    ("indian", "IN", "Venkataraman", "Srinivasan", "gf", None),
    ("indian", "IN", "Priyanka", "Chattopadhyay", "gf", None),
    ("indian", "IN", "Harpreet Kaur", "Sandhu", "gf", None),
    ("indian", "IN", "Rohit", "Deshpande", "gf", None),
    ("indian", "IN", "Sneha", "Kulkarni", "gf", None),
    ("indian", "IN", "Mohammed Irfan", "Qureshi", "gf", None),
    ("indian", "IN", "Karthikeyan", "Palaniswamy", "gf", None),
    ("arabic", "SA", "Abdulrahman", "Al-Qahtani", "gf", "عبدالرحمن القحطاني"),
    ("arabic", "SA", "Noura", "Al-Harbi", "gf", None),
    ("arabic", "MA", "Youssef", "El-Amrani", "gf", None),
    ("arabic", "LB", "Mariam", "Haddad", "gf", None),
    ("arabic", "AE", "Khalid bin Saeed", "Al-Mansouri", "gf", None),
    ("arabic", "JO", "Omar", "Abu-Khalil", "gf", None),
    ("arabic", "EG", "Layla", "Nasrallah", "gf", "ليلى نصرالله"),
    ("chinese", "CN", "Weiming", "Zhang", "fg", "张伟明"),
    ("chinese", "CN", "Xiaoyan", "Liu", "fg", "刘晓燕"),
    ("chinese", "CN", "Jianguo", "Chen", "fg", None),
    ("chinese", "TW", "Meiling", "Huang", "fg", "黄美玲"),
    ("chinese", "CN", "Zhiqiang", "Wang", "fg", None),
    ("chinese", "CN", "Yuting", "Zhao", "fg", None),
    ("chinese", "CN", "Haoran", "Deng", "fg", None),
    ("polish", "PL", "Małgorzata", "Wiśniewska", "gf", None),
    ("polish", "PL", "Krzysztof", "Jabłoński", "gf", None),
    ("polish", "PL", "Agnieszka", "Wójcik-Zielińska", "gf", None),
    ("polish", "PL", "Łukasz", "Szczepański", "gf", None),
    ("polish", "PL", "Zofia", "Kowalczyk", "gf", None),
    ("polish", "PL", "Bartłomiej", "Dąbrowski", "gf", None),
    ("polish", "PL", "Katarzyna", "Lewandowska", "gf", None),
    ("korean", "KR", "Min-seo", "Kim", "fg", "김민서"),
    ("korean", "KR", "Seung-woo", "Choi", "fg", "최승우"),
    ("korean", "KR", "Da-eun", "Kang", "fg", None),
    ("korean", "KR", "Sung-min", "Yoon", "fg", "윤성민"),
    ("korean", "KR", "Soo-jin", "Lim", "fg", None),
    ("korean", "KR", "Dong-hyun", "Shin", "fg", None),
    ("german", "DE", "Anna-Lena", "Brückner-Hoffmann", "gf", None),
    ("german", "DE", "Friedrich-Wilhelm", "von der Heyde", "gf", None),
    ("german", "DE", "Marie-Luise", "Oberndörfer", "gf", None),
    ("german", "DE", "Jörg-Peter", "Kleinschmidt-Vogt", "gf", None),
    ("german", "AT", "Hannelore", "Pichler-Steinacher", "gf", None),
]

PARTICLES = {"da", "de", "do", "dos", "das", "von", "der", "van", "den", "bin", "al", "el", "abu"}


def full_name(n: tuple) -> str:
    _, _, given, family, order, _ = n
    return f"{given} {family}" if order == "gf" else f"{family} {given}"


def family_tokens(family: str) -> list[str]:
    """The family name as written plus each distinctive piece of it (hyphen or space separated)."""
    out = [family]
    for piece in family.replace("-", " ").split():
        if piece.lower() not in PARTICLES and len(piece) >= 4 and piece not in out:
            out.append(piece)
    return out


# ----------------------------------------------------------------------------- dates

MONTHS = {
    "en": "January February March April May June July August September October November December",
    "fr": "janvier février mars avril mai juin juillet août septembre octobre novembre décembre",
    "de": "Januar Februar März April Mai Juni Juli August September Oktober November Dezember",
    "pt": "janeiro fevereiro março abril maio junho julho agosto setembro outubro novembro dezembro",
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre",
    "it": "gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre dicembre",
    "pl": "stycznia lutego marca kwietnia maja czerwca lipca sierpnia września października listopada grudnia",
    "nl": "januari februari maart april mei juni juli augustus september oktober november december",
}
MON3 = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]


def month(lang: str, m: int) -> str:
    return MONTHS[lang].split()[m - 1]


def random_date(rng: random.Random, y0: int, y1: int) -> tuple[int, int, int]:
    y = rng.randint(y0, y1)
    m = rng.randint(1, 12)
    d = rng.randint(1, 28)
    return y, m, d
