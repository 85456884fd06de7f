"""Check digits of national identity and tax numbers (pure functions over the number as written).

Each takes the value as it appears in text (separators allowed) and says whether its check digits are
right, so a number of the right length that fails its checksum is not taken for an identity number.
"""

from __future__ import annotations

from datetime import date

_VERHOEFF_D = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 2, 3, 4, 0, 6, 7, 8, 9, 5), (2, 3, 4, 0, 1, 7, 8, 9, 5, 6),
    (3, 4, 0, 1, 2, 8, 9, 5, 6, 7), (4, 0, 1, 2, 3, 9, 5, 6, 7, 8), (5, 9, 8, 7, 6, 0, 4, 3, 2, 1),
    (6, 5, 9, 8, 7, 1, 0, 4, 3, 2), (7, 6, 5, 9, 8, 2, 1, 0, 4, 3), (8, 7, 6, 5, 9, 3, 2, 1, 0, 4),
    (9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
)  # fmt: skip
_VERHOEFF_P = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 5, 7, 6, 2, 8, 3, 0, 9, 4), (5, 8, 0, 3, 7, 9, 6, 1, 4, 2),
    (8, 9, 1, 6, 0, 4, 3, 5, 2, 7), (9, 4, 5, 3, 1, 2, 6, 8, 7, 0), (4, 2, 8, 6, 5, 7, 3, 9, 0, 1),
    (2, 7, 9, 3, 8, 0, 6, 4, 1, 5), (7, 0, 4, 6, 9, 1, 3, 2, 5, 8),
)  # fmt: skip
_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"
_CF_ODD = {
    **dict(zip("0123456789", (1, 0, 5, 7, 9, 13, 15, 17, 19, 21), strict=True)),
    **dict(zip("ABCDEFGHIJKLMNOPQRSTUVWXYZ",
               (1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24, 23),
               strict=True)),
}  # fmt: skip


def digits(value: str) -> str:
    return "".join(c for c in value if c.isdigit())


def alnum(value: str) -> str:
    return "".join(c for c in value if c.isalnum()).upper()


def luhn(number: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(number)):
        d = int(c) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def _valid_date(year: int, month: int, day: int) -> bool:
    try:
        date(year, month, day)
    except ValueError:
        return False
    return True


def br_cpf(value: str) -> bool:
    n = digits(value)
    if len(n) != 11 or n == n[0] * 11:
        return False
    d = [int(c) for c in n]
    first = sum(d[i] * (10 - i) for i in range(9)) * 10 % 11 % 10
    second = sum(d[i] * (11 - i) for i in range(10)) * 10 % 11 % 10
    return d[9] == first and d[10] == second


def in_aadhaar(value: str) -> bool:
    n = digits(value)
    if len(n) != 12 or n[0] in "01":
        return False
    check = 0
    for i, c in enumerate(reversed(n)):
        check = _VERHOEFF_D[check][_VERHOEFF_P[i % 8][int(c)]]
    return check == 0


def uk_nhs(value: str) -> bool:
    n = digits(value)
    if len(n) != 10:
        return False
    check = 11 - sum(int(c) * (10 - i) for i, c in enumerate(n[:9])) % 11
    check = 0 if check == 11 else check
    return check != 10 and check == int(n[9])


def ca_sin(value: str) -> bool:
    n = digits(value)
    return len(n) == 9 and luhn(n)


def es_dni(value: str) -> bool:
    v = alnum(value)
    return len(v) == 9 and v[:8].isdigit() and _DNI_LETTERS[int(v[:8]) % 23] == v[8]


def es_nie(value: str) -> bool:
    v = alnum(value)
    if len(v) != 9 or v[0] not in "XYZ" or not v[1:8].isdigit():
        return False
    return _DNI_LETTERS[int(str("XYZ".index(v[0])) + v[1:8]) % 23] == v[8]


def it_codice_fiscale(value: str) -> bool:
    v = alnum(value)
    if len(v) != 16:
        return False
    total = 0
    for i, c in enumerate(v[:15]):
        if i % 2 == 0:  # 1st, 3rd, ... (odd positions counting from one)
            total += _CF_ODD[c]
        else:
            total += int(c) if c.isdigit() else ord(c) - ord("A")
    return chr(ord("A") + total % 26) == v[15]


def fr_nir(value: str) -> bool:
    v = alnum(value)
    if len(v) != 15:
        return False
    body = v[:13].replace("2A", "19").replace("2B", "18")
    if not body.isdigit() or not v[13:].isdigit():
        return False
    return 97 - int(body) % 97 == int(v[13:])


def de_steuer_id(value: str) -> bool:
    n = digits(value)
    if len(n) != 11 or n[0] == "0":
        return False
    counts = sorted((n[:10].count(c) for c in set(n[:10])), reverse=True)
    if counts[0] not in (2, 3) or (len(counts) > 1 and counts[1] > 1):
        return False
    product = 10
    for c in n[:10]:
        total = (int(c) + product) % 10 or 10
        product = total * 2 % 11
    return (11 - product) % 10 == int(n[10])


def nl_bsn(value: str) -> bool:
    n = digits(value)
    if len(n) != 9 or n == "0" * 9:
        return False
    total = sum(int(c) * w for c, w in zip(n[:8], range(9, 1, -1), strict=True)) - int(n[8])
    return total % 11 == 0


def pl_pesel(value: str) -> bool:
    n = digits(value)
    if len(n) != 11:
        return False
    d = [int(c) for c in n]
    if (10 - sum(a * b for a, b in zip(d[:10], (1, 3, 7, 9, 1, 3, 7, 9, 1, 3), strict=True)) % 10) % 10 != d[
        10
    ]:
        return False
    month = d[2] * 10 + d[3]
    century = {0: 1900, 20: 2000, 40: 2100, 60: 2200, 80: 1800}[month // 20 * 20]
    return _valid_date(century + d[0] * 10 + d[1], month % 20, d[4] * 10 + d[5])


def se_personnummer(value: str) -> bool:
    n = digits(value)
    if len(n) == 12:
        n = n[2:]
    if len(n) != 10:
        return False
    day = int(n[4:6])
    return _valid_date(2000, int(n[2:4]), day - 60 if day > 60 else day) and luhn(n)


def cn_resident_id(value: str) -> bool:
    v = value.strip().upper()
    if len(v) != 18 or not v[:17].isdigit():
        return False
    if not _valid_date(int(v[6:10]), int(v[10:12]), int(v[12:14])):
        return False
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    check = (12 - sum(int(c) * w for c, w in zip(v[:17], weights, strict=True)) % 11) % 11
    return v[17] == ("X" if check == 10 else str(check))


def kr_rrn(value: str) -> bool:
    n = digits(value)
    if len(n) != 13 or not _valid_date(2000, int(n[2:4]), int(n[4:6])):
        return False
    weights = (2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5)
    check = (11 - sum(int(c) * w for c, w in zip(n[:12], weights, strict=True)) % 11) % 10
    return check == int(n[12])


def jp_my_number(value: str) -> bool:
    n = digits(value)
    if len(n) != 12:
        return False
    body = [int(c) for c in reversed(n[:11])]
    total = sum(d * (i + 2 if i < 6 else i - 4) for i, d in enumerate(body))
    check = 0 if total % 11 <= 1 else 11 - total % 11
    return check == int(n[11])


def in_pan(value: str) -> bool:
    v = alnum(value)
    return len(v) == 10 and v[:5].isalpha() and v[5:9].isdigit() and v[9].isalpha() and v[3] in "PCHFATBLJG"


def uk_nino(value: str) -> bool:
    v = alnum(value)
    return (
        len(v) == 9
        and v[0] not in "DFIQUV"
        and v[1] not in "DFIOQUV"
        and v[:2] not in ("BG", "GB", "NK", "KN", "TN", "NT", "ZZ")
        and v[2:8].isdigit()
        and v[8] in "ABCD"
    )
