"""Clean records: near misses that look like personal data and must come through redaction untouched.

ISBN-13s with valid check digits in book contexts, GTIN-13 product codes, epoch timestamps, order
ids, tracking numbers, version strings, dates with no birth cue (invoices, deadlines, created_at,
log timestamps), product codes, street words that are not addresses (companies, newspapers, albums),
nine-digit numbers that are not SSNs, sixteen-digit references that fail the Luhn test, hashes and
identifiers. Every record has must_redact = [] and lists the near-miss strings in must_keep.
"""

from __future__ import annotations

import json
import random
import uuid

import carriers as cr
import corpus_values as cv

TITLES = ["The Cartographer's Daughter", "Distributed Systems in Practice", "A Short History of Salt Roads",
          "Learning Rust the Hard Way", "Winter Orchards", "Tidal Mechanics for Engineers",
          "The Quiet Archive", "Modern Fermentation", "Patterns of Urban Rivers"]  # fmt: skip


def isbn13(rng: random.Random, hyphens: bool) -> str:
    body = rng.choice(["978", "979"]) + cr.digits(rng, 9)
    num = body + cv.isbn13_check_digit(body)
    assert cv.isbn13_ok(num)
    return f"{num[:3]}-{num[3]}-{num[4:8]}-{num[8:12]}-{num[12]}" if hyphens else num


def _isbn(rng: random.Random, i: int) -> tuple[str, dict, list[str]]:
    isbn = isbn13(rng, i % 2 == 0)
    title = rng.choice(TITLES)
    price = f"{rng.randint(9, 59)}.{rng.choice(['99', '50', '00'])}"
    if i % 3 == 0:
        return "tool_result", {"data": {"status": "ok", "result": {"title": title, "isbn_13": isbn, "price": price,
                                                                    "format": "paperback"}}, "tool": "catalog.lookup"}, [isbn, title]  # fmt: skip
    if i % 3 == 1:
        return (
            "chat_user",
            {"text": f"Do you have '{title}' in stock? ISBN {isbn}, the {price} edition.", "role": "user"},
            [isbn],
        )
    return "csv", {"text": f"isbn,title,qty\n{isbn},{json.dumps(title)},{rng.randint(1, 40)}\n"}, [isbn]


def _gtin(rng: random.Random, i: int) -> tuple[str, dict, list[str]]:
    body = rng.choice(["400", "590", "761", "871", "049"]) + cr.digits(rng, 9)
    gtin = body + cv.isbn13_check_digit(body)  # GTIN-13 uses the same 1,3 weights
    sku = (
        f"{rng.choice(['TSH', 'MUG', 'KBD', 'LMP'])}-{cr.digits(rng, 4)}-{rng.choice(['S', 'M', 'L', 'XL'])}"
    )
    return "tool_call_args", {"data": {"sku": sku, "ean": gtin, "warehouse": "DC-03", "qty": rng.randint(1, 200)},
                              "tool": "inventory.adjust"}, [gtin, sku]  # fmt: skip


def _epoch(rng: random.Random, i: int) -> tuple[str, dict, list[str]]:
    sec = rng.randint(1_700_000_000, 1_790_000_000)
    if i % 2 == 0:
        ms = sec * 1000 + rng.randint(0, 999)
        return "tool_result", {"data": {"status": "ok", "result": {"job": f"export-{cr.hexs(rng, 6)}", "started_ms": ms,
                                                                    "finished_ms": ms + rng.randint(1000, 90000)}}, "tool": "jobs.status"}, [str(ms)]  # fmt: skip
    return (
        "log_line",
        {"text": f'ts={sec} level=info msg="cache refreshed" entries={rng.randint(100, 9000)}'},
        [str(sec)],
    )


def _order(rng: random.Random, i: int) -> tuple[str, dict, list[str]]:
    amazon = f"{rng.randint(111, 114)}-{cr.digits(rng, 7)}-{cr.digits(rng, 7)}"
    shop = f"#{rng.randint(1001, 9999)}"
    ref = f"PO-{rng.randint(2024, 2026)}-{cr.digits(rng, 5)}"
    if i % 2 == 0:
        return (
            "chat_user",
            {"text": f"Order {amazon} arrived damaged, the reseller's own order was {shop}.", "role": "user"},
            [amazon, shop],
        )
    return (
        "sql_insert",
        {
            "text": f"INSERT INTO purchase_orders (po_ref, supplier, total) VALUES ('{ref}', 'Acme Fasteners', 1840.00);"
        },
        [ref, "Acme Fasteners"],
    )


def _tracking(rng: random.Random, i: int) -> tuple[str, dict, list[str]]:
    alnum = "".join(rng.choice("0123456789ABCDEFGHJKLMNPRSTUVWXY") for _ in range(6))
    ups = f"1Z{alnum}{cr.digits(rng, 10)}"
    usps = " ".join(["9400", *(cr.digits(rng, 4) for _ in range(4)), cr.digits(rng, 2)])
    fedex = cr.digits(rng, 12)
    if i % 3 == 0:
        return "tool_result", {"data": {"status": "ok", "result": {"carrier": "UPS", "tracking_number": ups, "eta": "2026-02-11"}},
                               "tool": "shipping.track"}, [ups, "2026-02-11"]  # fmt: skip
    if i % 3 == 1:
        return (
            "email",
            {
                "text": f"Subject: Your parcel is on its way\n\nUSPS tracking: {usps}\nExpected delivery: Thursday.\n"
            },
            [usps],
        )
    return (
        "log_line",
        {
            "text": f"{cr.timestamp(rng)} INFO shipping label.created carrier=fedex tracking={fedex} weight_kg=2.4"
        },
        [fedex],
    )


def _version(rng: random.Random, i: int) -> tuple[str, dict, list[str]]:
    v1 = f"{rng.randint(1, 4)}.{rng.randint(0, 30)}.{rng.randint(0, 12)}"
    v2 = f"v{rng.randint(0, 3)}.{rng.randint(1, 20)}.{rng.randint(0, 9)}-rc.{rng.randint(1, 4)}"
    if i % 2 == 0:
        return (
            "yaml",
            {"text": f"image: registry.example/sluice-worker:{v1}\nchart_version: {v2}\nreplicas: 3\n"},
            [v1, v2],
        )
    return (
        "chat_user",
        {
            "text": f"After upgrading from {v1} to {v2} the build on Python 3.11.7 fails at link time.",
            "role": "user",
        },
        [v1, v2, "3.11.7"],
    )


def _dates(rng: random.Random, i: int) -> tuple[str, dict, list[str]]:
    y, m, d = cv.random_date(rng, 2024, 2026)
    iso, dmy, de = f"{y}-{m:02d}-{d:02d}", f"{d:02d}/{m:02d}/{y}", f"{d:02d}.{m:02d}.{y}"
    long_en = f"{d} {cv.month('en', m)} {y}"
    k = i % 6
    if k == 0:
        return (
            "email",
            {
                "text": f"Subject: Invoice INV-{cr.digits(rng, 5)}\n\nInvoice date: {dmy}\nPayment due within 30 days.\n"
            },
            [dmy],
        )
    if k == 1:
        return (
            "chat_user",
            {
                "text": f"The filing deadline is {long_en}, can we get the draft by the week before?",
                "role": "user",
            },
            [long_en],
        )
    if k == 2:
        ts = cr.timestamp(rng)
        return "tool_result", {"data": {"status": "ok", "result": {"id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                                                                    "created_at": ts, "updated_at": iso}}, "tool": "crm.get_deal"}, [ts, iso]  # fmt: skip
    if k == 3:
        return (
            "chat_user",
            {"text": f"Rechnungsdatum: {de}, Lieferung am {d:02d}.{m % 12 + 1:02d}.{y}.", "role": "user"},
            [de],
        )
    if k == 4:
        return (
            "log_line",
            {"text": f"{iso} 08:{rng.randint(10, 59)}:03,118 WARN scheduler job nightly-etl late by 42s"},
            [iso, "nightly-etl"],
        )
    return "chat_user", {"text": f"Date d'échéance : {dmy}. Le contrat a été signé le {long_en.replace(cv.month('en', m), cv.month('fr', m))}.",
                         "role": "user"}, [dmy]  # fmt: skip


def _streetish(rng: random.Random, i: int) -> tuple[str, dict, list[str]]:
    items = [
        ("chat_user", "Main Street Capital reported higher net investment income this quarter; is MAIN still a buy?", ["Main Street Capital"]),
        ("chat_user", "Summarise today's Wall Street Journal piece on regional bank earnings.", ["Wall Street Journal"]),
        ("chat_user", "Which studio did the Beatles record Abbey Road in, and how long did it take?", ["Abbey Road"]),
        ("email", "Subject: Team offsite\n\nWe booked the karaoke room; someone already claimed Boulevard of Broken Dreams.\n", ["Boulevard of Broken Dreams"]),
        ("chat_user", "Write a product description for our Park Avenue collection of office chairs.", ["Park Avenue collection"]),
        ("chat_user", "In the Rust book, chapter 7 explains paths; what does 'crate::front_of_house' resolve to?", ["crate::front_of_house"]),
        ("tool_result", {"status": "ok", "result": {"company": "Main Street Capital Corporation", "ticker": "MAIN", "exchange": "NYSE"}}, ["Main Street Capital Corporation"]),
        ("chat_user", "Fleet Street was the home of British newspapers until the 1980s - give me three sources on the move.", ["Fleet Street"]),
    ]  # fmt: skip
    carrier, body, keep = items[i % len(items)]
    if isinstance(body, dict):
        return carrier, {"data": body, "tool": "market.lookup"}, keep
    return carrier, {"text": body, **({"role": "user"} if carrier == "chat_user" else {})}, keep


def _nine_digits(rng: random.Random, i: int) -> tuple[str, dict, list[str]]:
    ticket = f"9{cr.digits(rng, 8)}"  # area 9xx: never an SSN
    if i % 2 == 0:
        return (
            "chat_user",
            {"text": f"Zendesk ticket {ticket} is still open, can you escalate?", "role": "user"},
            [ticket],
        )
    batch = f"000{cr.digits(rng, 6)}"  # area 000: never an SSN
    return (
        "log_line",
        {"text": f"{cr.timestamp(rng)} INFO worker processed batch_id={batch} rows=5000"},
        [batch],
    )


def _non_luhn(rng: random.Random, i: int) -> tuple[str, dict, list[str]]:
    while True:
        num = "".join(rng.choice("0123456789") for _ in range(16))
        if not cv.luhn_ok(num) and num[0] not in "3456":  # no card brand prefix, fails Luhn
            break
    return "tool_result", {"data": {"status": "ok", "result": {"shipment_batch": num, "pallets": rng.randint(2, 30)}},
                           "tool": "wms.batch"}, [num]  # fmt: skip


def _misc(rng: random.Random, i: int) -> tuple[str, dict, list[str]]:
    sha = cr.hexs(rng, 40)
    tmp = f"TMP-{cr.digits(rng, 4)}"
    uid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    items = [
        ("chat_user", f"Revert commit {sha}, it broke the nightly build.", [sha]),
        ("tool_call_args", {"trace_id": uid, "span": "db.query", "duration_ms": rng.randint(3, 900)}, [uid]),
        ("http_request", f"GET /v1/orders?page=2&per_page=50 HTTP/1.1\nHost: api.northwind.example\nAccept: application/json\nIf-None-Match: \"{cr.hexs(rng, 16)}\"\n", ["/v1/orders?page=2&per_page=50"]),
        ("log_line", f"{cr.timestamp(rng)} ERROR postgres connection refused host=db-primary port=5432 attempt=3", ["port=5432", "db-primary"]),
        ("chat_user", f"The installer fails with error 0x80070005 on build {rng.randint(19041, 22631)}.{rng.randint(1000, 4000)}.", ["0x80070005"]),
        ("yaml", "theme:\n  primary: \"#1A73E8\"\n  font: Noto Sans JP\n  radius_px: 6\n", ["#1A73E8", "Noto Sans JP"]),
        ("chat_user", "NEW YORK TIMES BESTSELLER - PREMIUM EDITION - LIMITED PRINT RUN. Is that blurb too loud for the cover?", ["NEW YORK TIMES BESTSELLER"]),
        ("csv", f"sensor_id,reading,unit\n{tmp},21.{rng.randint(0, 9)},C\nHUM-{cr.digits(rng, 4)},48,%\n", [tmp]),
    ]  # fmt: skip
    carrier, body, keep = items[i % len(items)]
    if isinstance(body, dict):
        return carrier, {"data": body, "tool": "tracing.record"}, keep
    return carrier, {"text": body, **({"role": "user"} if carrier == "chat_user" else {})}, keep


CLEAN_KINDS = [("isbn13", _isbn, 9), ("gtin13", _gtin, 4), ("epoch", _epoch, 6), ("order_id", _order, 6),
               ("tracking", _tracking, 6), ("version", _version, 5), ("date_no_birth_cue", _dates, 12),
               ("street_word", _streetish, 8), ("nine_digits", _nine_digits, 4), ("non_luhn_16", _non_luhn, 3),
               ("identifier", _misc, 8)]  # fmt: skip


def gen_clean(c) -> None:
    for name, fn, n in CLEAN_KINDS:
        for i in range(n):
            carrier, body, keep = fn(c.rng, i)
            c.add("clean", carrier, body, [], [], keep, near_miss=name)
