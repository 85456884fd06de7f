"""Carriers: the shapes agent traffic takes, each wrapping labelled fields and near-miss context.

``render`` turns (fields, context, sentence) into a record body for one carrier: ``text`` for chat
messages, e-mails, YAML, SQL, CSV, HTTP dumps and log lines; ``data`` (a JSON-able object) for
tool-call arguments and tool results. Values are written verbatim (JSON with ensure_ascii=False,
no URL-encoding, SQL values free of quotes), so every labelled substring is findable in the record.
"""

from __future__ import annotations

import datetime
import json
import random

TEXT_PROSE = ("chat_user", "email")
STRUCTURED = ("tool_call_args", "tool_result", "yaml", "sql_insert", "csv", "http_request", "log_line")
ALL = TEXT_PROSE + STRUCTURED


def digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789") for _ in range(n))


def hexs(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def timestamp(rng: random.Random) -> str:
    return (f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:"
            f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z")  # fmt: skip


def context(rng: random.Random, n: int = 2) -> list[tuple[str, str]]:
    """Near-miss fields that ride along with personal data and must survive redaction."""
    pool = [
        ("order_id", f"ORD-{rng.randint(2024, 2026)}-{digits(rng, 6)}"),
        ("created_at", timestamp(rng)),
        ("sku", f"SKU-{digits(rng, 5)}-{rng.choice(['BLK', 'WHT', 'RED', 'NAT', 'GRN'])}"),
        ("ticket", f"CS-{digits(rng, 5)}"),
        ("request_id", f"req_{hexs(rng, 16)}"),
        ("plan", rng.choice(["pro-annual", "team-monthly", "starter-2025"])),
    ]
    return rng.sample(pool, n)


TOOLS = ("update_customer", "create_shipment", "lookup_account", "submit_application", "crm.upsert_contact",
         "kyc.verify_identity", "billing.charge", "hr.onboard_employee")  # fmt: skip
TABLES = ("customers", "applicants", "shipments", "contacts", "patients", "bookings")
SERVICES = ("checkout-svc", "kyc-worker", "crm-sync", "booking-api", "support-bot")


def _yaml_scalar(v: object) -> str:
    s = str(v)
    leading_zero = s[:1] == "0" and s.replace(" ", "").replace("-", "").isdigit()
    if isinstance(v, int) or leading_zero or any(c in s for c in ":#{}[],&*!|>'\"%@`") or s != s.strip():
        return json.dumps(v, ensure_ascii=False) if not isinstance(v, int) else s
    return s


def _csv_cell(v: object) -> str:
    s = str(v)
    return f'"{s}"' if any(c in s for c in ',"\n') else s


def render(
    rng: random.Random,
    carrier: str,
    fields: list[tuple[str, object]],
    ctx: list[tuple[str, str]],
    sentence: str | None = None,
) -> dict:
    """The record body ({"text": ...} or {"data": ..., "tool": ...}) for one carrier."""
    allf = [ctx[0], *fields, *ctx[1:]]
    if carrier == "chat_user":
        refs = ", ".join(f"{k} {v}" for k, v in ctx)
        return {"text": f"{sentence} ({refs})", "role": "user"}
    if carrier == "email":
        subject = rng.choice(["Re: your request", "Update to my details", "Re: Re: booking", "Fwd: form"])
        day = datetime.date(2025, 10, rng.randint(6, 28))
        date = f"{day:%a}, {day.day} Oct 2025 09:{rng.randint(10, 59)}:07 +0000"
        more = "".join(f"{k}: {v}\n" for k, v in ctx)
        quoted = "\n".join(
            f"> {line}" for line in ["Thanks for reaching out.", "Could you confirm the details below?"]
        )
        text = (f"From: customer-{digits(rng, 4)}@mail.example\nTo: support@northwind-outfitters.example\n"
                f"Subject: {subject}\nDate: {date}\n\nHello,\n\n{sentence}\n\n{more}\n"
                f"Thanks\n\nOn Fri, 3 Oct 2025 at 16:02, Northwind Support wrote:\n{quoted}\n")  # fmt: skip
        return {"text": text}
    if carrier == "tool_call_args":
        return {"data": {k: v for k, v in allf}, "tool": rng.choice(TOOLS)}
    if carrier == "tool_result":
        return {"data": {"status": "ok", "result": {k: v for k, v in allf}}, "tool": rng.choice(TOOLS)}
    if carrier == "yaml":
        top = rng.choice(["customer", "applicant", "contact", "record"])
        body = "\n".join(f"  {k}: {_yaml_scalar(v)}" for k, v in allf)
        src = rng.choice(["crm-sync", "nightly export", "support-bot memory", "kyc-worker"])
        return {"text": f"# {src}, record {hexs(rng, 8)}\n{top}:\n{body}\n"}
    if carrier == "sql_insert":
        cols = ", ".join(k if k.isascii() and k.isidentifier() else f'"{k}"' for k, _ in allf)
        vals = ", ".join(str(v) if isinstance(v, int) else f"'{v}'" for _, v in allf)
        return {"text": f"INSERT INTO {rng.choice(TABLES)} ({cols}) VALUES ({vals});"}
    if carrier == "csv":
        head = ",".join(_csv_cell(k) for k, _ in allf)
        row = ",".join(_csv_cell(v) for _, v in allf)
        return {"text": f"{head}\n{row}\n"}
    if carrier == "http_request":
        body = json.dumps({k: v for k, v in allf}, ensure_ascii=False)
        path = rng.choice(["/v1/customers", "/api/applications", "/v2/contacts/merge", "/kyc/submit"])
        return {"text": (f"POST {path} HTTP/1.1\nHost: api.northwind.example\nContent-Type: application/json\n"
                         f"X-Request-Id: {hexs(rng, 12)}\nContent-Length: {len(body.encode())}\n\n{body}")}  # fmt: skip
    if carrier == "log_line":
        pairs = " ".join(f'{k}="{v}"' for k, v in allf)
        return {"text": f"{timestamp(rng)} INFO {rng.choice(SERVICES)} record.saved {pairs}"}
    raise ValueError(carrier)
