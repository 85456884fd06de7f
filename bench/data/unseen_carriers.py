"""Carriers for the independent evaluation set: the shapes real agent traffic puts a value in.

A carrier takes a planted value (and an rng) and returns ``(role, text)``: the role says where the text
travels in a step (``user`` turn, ``tool`` result, the assistant's ``call`` arguments or its free
``assistant`` text), the text is what the agent sent. Shapes: ``.env`` and INI/TOML/YAML config lines,
stack traces and HTTP logs, CSV rows, shell commands, email headers and bodies, URLs, JSON records
(flat fields, nested objects, ``{"field": ..., "value": ...}`` pairs, lists of key/value entries) and
free text in several languages. Nothing here knows how the recognizers work.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from bench.data.unseen_values import clean_values

Carrier = Callable[[random.Random, str], tuple[str, str]]

SECRET_KEYS: dict[str, tuple[str, ...]] = {
    "AWS_ACCESS_KEY_ID": (
        "AWS_ACCESS_KEY_ID",
        "aws_access_key_id",
        "token",
        "access_key",
        "accessKeyId",
        "key_id",
    ),
    "AWS_SECRET_ACCESS_KEY": (
        "AWS_SECRET_ACCESS_KEY",
        "aws_secret_access_key",
        "secretAccessKey",
        "secret_key",
    ),
    "OPENAI_API_KEY": ("OPENAI_API_KEY", "openai_key", "api_key", "apiKey", "OPENAI_TOKEN"),
    "ANTHROPIC_API_KEY": ("ANTHROPIC_API_KEY", "anthropic_key", "api_key", "x-api-key"),
    "GITHUB_TOKEN": ("GITHUB_TOKEN", "GH_TOKEN", "github_pat", "token", "oauth_token"),
    "SLACK_TOKEN": ("SLACK_BOT_TOKEN", "slack_token", "SLACK_WEBHOOK_URL", "webhook"),
    "STRIPE_KEY": ("STRIPE_SECRET_KEY", "stripe_api_key", "STRIPE_WEBHOOK_SECRET", "secret"),
    "GOOGLE_API_KEY": ("GOOGLE_API_KEY", "maps_api_key", "key", "GCP_KEY"),
    "JWT": ("access_token", "id_token", "JWT", "refresh_token", "session_token"),
    "VENDOR_TOKEN": (
        "HF_TOKEN",
        "GITLAB_TOKEN",
        "NPM_TOKEN",
        "SENDGRID_API_KEY",
        "TWILIO_API_KEY",
        "MAILGUN_API_KEY",
        "PYPI_TOKEN",
        "auth_token",
    ),  # fmt: skip
    "PASSWORD": (
        "DB_PASSWORD",
        "password",
        "db_url_password",
        "passwd",
        "pwd",
        "admin_pass",
        "MYSQL_ROOT_PASSWORD",
        "smtp_password",
        "redis_password",
        "POSTGRES_PASSWORD",
        "passphrase",
    ),  # fmt: skip
    "HEX_SECRET": (
        "SESSION_SECRET",
        "secret_key_base",
        "encryption_key",
        "hmac_secret",
        "signing_key",
        "DJANGO_SECRET_KEY",
        "webhook_secret",
        "client_secret",
    ),  # fmt: skip
    "BASE64_SECRET": (
        "ENCRYPTION_KEY",
        "master_key",
        "client_secret",
        "private_key",
        "aes_key",
        "credentials",
        "AccountKey",
        "shared_secret",
    ),  # fmt: skip
}


def env_line(key: str) -> Carrier:
    def f(rng: random.Random, v: str) -> tuple[str, str]:
        cv = clean_values(rng)
        lines = [f"APP_VERSION={cv['version']}", f"PORT={cv['port']}", f"{key}={v}", "LOG_LEVEL=info",
                 f"BUILD_SHA={cv['sha']}"]  # fmt: skip
        rng.shuffle(lines)
        return "tool", json.dumps({"path": ".env", "content": "\n".join(lines)})

    return f


def config_line(key: str) -> Carrier:
    def f(rng: random.Random, v: str) -> tuple[str, str]:
        style = rng.randrange(4)
        if style == 0:
            text = f'[default]\nregion = eu-west-1\n{key} = "{v}"\noutput = json'
        elif style == 1:
            text = f"database:\n  host: db.internal\n  port: 5432\n  {key}: {v}\n  pool: 10"
        elif style == 2:
            text = f"settings = {{\n    'debug': False,\n    '{key}': '{v}',\n    'timeout': 30,\n}}"
        else:
            text = f"$ cat config.toml\n[service]\nname = \"billing\"\n{key} = '{v}'\nretries = 3"
        return "tool", text

    return f


def kv_pair_json(key: str) -> Carrier:
    def f(rng: random.Random, v: str) -> tuple[str, str]:
        shape = rng.randrange(4)
        if shape == 0:
            body = {"field": key, "value": v}
        elif shape == 1:
            body = {"settings": [{"name": "region", "value": "us-east-2"}, {"name": key, "value": v}]}
        elif shape == 2:
            body = {"op": "set", "key": key, "val": v, "env": "prod"}
        else:
            body = {"name": key, "type": "string", "value": v, "updated": clean_values(rng)["date"]}
        return "call", json.dumps(body)

    return f


def nested_json(key: str) -> Carrier:
    def f(rng: random.Random, v: str) -> tuple[str, str]:
        body = {
            "service": "payments",
            "config": {"auth": {key: v, "rotate_days": 90}},
            "version": clean_values(rng)["version"],
        }
        return "tool", json.dumps(body, indent=rng.choice((None, 2)))

    return f


def free_text(rng: random.Random, v: str) -> tuple[str, str]:
    text = rng.choice((
        f"I pasted the key {v} into the dashboard and it still says unauthorized.",
        f"here's the token: {v} -- can you check why the deploy fails?",
        f"Mein Schlüssel ist {v}, funktioniert aber nicht.",
        f"La clé d'API {v} a expiré hier.",
        f"use {v} for now, i'll rotate it tomorrow",
    ))  # fmt: skip
    return "user", text


def stack_trace(rng: random.Random, v: str) -> tuple[str, str]:
    text = (
        'Traceback (most recent call last):\n  File "/srv/app/client.py", line 88, in send\n'
        f"    resp = session.post(url, headers={{'Authorization': 'Bearer {v}'}}, timeout=10)\n"
        '  File "/usr/lib/python3.11/site-packages/requests/sessions.py", line 637, in post\n'
        "requests.exceptions.HTTPError: 401 Client Error: Unauthorized"
    )
    return "tool", text


def curl_command(rng: random.Random, v: str) -> tuple[str, str]:
    text = rng.choice((
        f"curl -s -H 'Authorization: Bearer {v}' https://api.internal/v2/jobs?limit=50",
        f"curl -H \"X-Api-Key: {v}\" -d @payload.json https://hooks.partner.net/ingest",
        f"GET /v1/export?format=csv&api_key={v} HTTP/1.1",
    ))  # fmt: skip
    return rng.choice(("call", "tool")), json.dumps({"cmd": text}) if rng.random() < 0.5 else text


def url_with_password(rng: random.Random, v: str) -> tuple[str, str]:
    user = rng.choice(("admin", "app", "svc_billing", "deploy", "postgres", "root"))
    host = rng.choice(("db.internal:5432/orders", "cluster0.mongodb.net/prod", "cache.internal:6379/0",
                       "mq.internal:5672/vhost", "github.com/acme/infra.git", "ftp.partner.example:21/in"))  # fmt: skip
    scheme = rng.choice(("postgresql", "mongodb+srv", "redis", "amqp", "https", "ftp", "mysql"))
    url = f"{scheme}://{user}:{v}@{host}"
    style = rng.randrange(3)
    if style == 0:
        return "tool", f"DATABASE_URL={url}"
    if style == 1:
        return "call", json.dumps({"dsn": url, "pool_size": 5})
    return "user", f"connection fails with {url} -- timeout after 30s"


def private_key_carrier(rng: random.Random, v: str) -> tuple[str, str]:
    if rng.random() < 0.5:
        return "tool", json.dumps({"path": "deploy/id_rsa", "content": v})
    return "tool", f"$ cat ~/.ssh/id_ed25519\n{v}\n$ ls -la ~/.ssh"


SECRET_CARRIERS: tuple[Callable[[str], Carrier], ...] = (env_line, config_line, kv_pair_json, nested_json)
CONTEXT_FREE: tuple[Carrier, ...] = (free_text, stack_trace, curl_command)


# ----------------------------------------------------------------------------- PII carriers


def contact_record(field: str) -> Carrier:
    def f(rng: random.Random, v: str) -> tuple[str, str]:
        cv = clean_values(rng)
        body = {"customer_id": rng.randint(10_000, 99_999), "order": cv["order"], field: v, "tier": "gold",
                "updated_at": cv["date"]}  # fmt: skip
        if rng.random() < 0.3:
            body = {"record": {"contact": {field: v}}, "ticket": cv["ticket"]}
        return "tool", json.dumps(body)

    return f


def csv_row(header: str) -> Carrier:
    def f(rng: random.Random, v: str) -> tuple[str, str]:
        cv = clean_values(rng)
        cols = ["id", header, "created", "status"]
        row = [str(rng.randint(100, 999)), f'"{v}"' if "," in v else v, cv["date"], "active"]
        other = f"{rng.randint(100, 999)},{'n/a'},{clean_values(rng)['date']},closed"
        return "tool", f"$ head -3 export.csv\n{','.join(cols)}\n{','.join(row)}\n{other}"

    return f


def prose(templates: tuple[str, ...]) -> Carrier:
    def f(rng: random.Random, v: str) -> tuple[str, str]:
        return rng.choice(("user", "tool", "assistant")), rng.choice(templates).format(v=v)

    return f


PHONE_TEXT = (
    "Please call the customer back on {v} before noon.", "Kontakt: Herr Weber, Tel. {v}",
    "Rappelez-moi au {v}, merci.", "Llámame al {v} cuando puedas.", "my cell is {v}, text first",
    "Emergency contact: {v}", "tel: {v} | fax: none", "Reached voicemail at {v}; left a message.",
    "Phone number on file: {v}.", "WhatsApp {v} if the line is busy",
)  # fmt: skip
CARD_TEXT = (
    "Charge the card {v} for the renewal, exp 11/28.", "The payment with card {v} was declined (code 05).",
    "Customer read me their credit card number {v} over the phone.", "refund to card ending... actually full number {v}",
    "Karte {v} wurde abgelehnt.", "cc: {v}  cvv on file", "Paid by Amex {v} on the 3rd.", "PAN {v} flagged by fraud rules",
)  # fmt: skip
EMAIL_TEXT = (
    "From: Billing <{v}>\nSubject: Invoice overdue", "Send the report to {v} please.",
    "ERROR smtp delivery to {v} failed: mailbox full", "Bitte an {v} weiterleiten.", "mailto:{v}?subject=refund",
)  # fmt: skip
IBAN_TEXT = (
    "Please wire the refund to IBAN {v}.", "Bankverbindung: {v} (Sparkasse)", "Virement sur le compte {v} svp",
    "beneficiary_iban={v} amount=1200.00 EUR",
)  # fmt: skip
IP_TEXT = (
    "Failed password for root from {v} port 52144 ssh2", "client {v} exceeded the rate limit (429)",
    "2024-05-02T10:11:12Z GET /login 200 remote_addr={v} 14ms", "allowlist {v}/32 on the firewall",
)  # fmt: skip
SSN_TEXT = (
    "SSN: {v}, date of birth 1979-02-11", "The applicant's social security number is {v}.",
    "ssn={v} verified=true", "Her SSN {v} does not match the IRS record.",
)  # fmt: skip
PERSON_TEXT = (
    "Dear {v},\nthank you for your patience while we looked into the invoice.",
    "{v} called again about the delayed shipment and wants a supervisor.",
    "Assigned the ticket to {v}; she is on call this week.", "Best regards,\n{v}\nAccount Manager",
    "Meeting notes: {v} agreed to send the revised quote by Friday.",
    "Bitte rufen Sie {v} zurück, es geht um die Rechnung.", "Le client {v} a demandé un remboursement.",
    "El señor {v} no ha recibido el pedido.", "The patient, {v}, was discharged on Monday.",
    "I spoke with {v} from procurement this morning.",
)  # fmt: skip


def person_record(rng: random.Random, full: str, given: str, family: str) -> tuple[str, str]:
    cv = clean_values(rng)
    shape = rng.randrange(5)
    if shape == 0:
        body = {"customer_name": full, "order": cv["order"], "status": "shipped"}
    elif shape == 1:
        body = {"first_name": given, "last_name": family, "plan": "pro", "seats": rng.randint(1, 50)}
    elif shape == 2:
        body = {"assignee": full, "ticket": cv["ticket"], "priority": "P2"}
    elif shape == 3:
        body = {"contact": f"{full} <{given.lower().split()[0]}@example.net>", "sku": cv["sku"]}
    else:
        return "tool", f"id,name,city,joined\n{rng.randint(1, 999)},{full},Lyon,{cv['date']}"
    return "tool", json.dumps(body, ensure_ascii=rng.random() < 0.5)


# ----------------------------------------------------------------------------- clean near-miss texts


def clean_text(rng: random.Random) -> tuple[str, str]:
    """A text with no PII or secret in it, full of identifier-shaped things (and product names)."""
    cv = clean_values(rng)
    choice = rng.randrange(12)
    if choice == 0:
        return "tool", json.dumps({"order_id": cv["order"], "request_id": cv["uuid"], "duration_ms": cv["timing"],
                                   "sku": cv["sku"], "tracking": cv["tracking"], "total": cv["price"]})  # fmt: skip
    if choice == 1:
        return (
            "tool",
            f"Successfully installed {cv['product']} {cv['version']} in {cv['duration']} (build {cv['sha'][:12]})",
        )
    if choice == 2:
        return "tool", (f"INFO  [{cv['date']}T10:22:01Z] worker {cv['pod']} processed {cv['count']} events in {cv['timing']}"
                        f"\nWARN  retry 2/5 for {cv['ticket']} after {cv['timing']}")  # fmt: skip
    if choice == 3:
        return (
            "user",
            f"Can you compare {cv['product']} and {clean_values(rng)['product']} for our team? Budget is {cv['price']} per seat.",
        )
    if choice == 4:
        return "tool", json.dumps({"image": f"registry.internal/api@{cv['digest']}", "version": cv["version"],
                                   "started_at_ms": cv["epoch_ms"], "replicas": 3, "token_count": rng.randint(100, 9000),
                                   "token_type": "bearer", "password_policy": "min 12 characters"})  # fmt: skip
    if choice == 5:
        return (
            "assistant",
            f"The regression appeared in {cv['version']} (commit {cv['sha']}); p99 latency went from {cv['timing']} to {clean_values(rng)['timing']}.",
        )
    if choice == 6:
        return (
            "tool",
            f"$ snmpwalk -v2c localhost {cv['oid']}\nSNMPv2-SMI::enterprises.{cv['oid'][13:]} = INTEGER: {cv['count']}",
        )
    if choice == 7:
        return (
            "tool",
            f"id,sku,qty,price,shipped\n{cv['invoice']},{cv['sku']},{rng.randint(1, 9)},{cv['price']},{cv['date']}",
        )
    if choice == 8:
        return "call", json.dumps(
            {"query": f"select * from orders where id = '{cv['order']}' limit 10", "timeout_s": 30}
        )
    if choice == 9:
        return (
            "user",
            f"Order {cv['order']} (invoice {cv['invoice']}, ISBN {cv['isbn']}) shipped with tracking {cv['tracking']}.",
        )
    if choice == 10:
        return (
            "tool",
            f"Disk usage {cv['bytes']} ({cv['percent']}), uptime {cv['duration']}, {cv['product']} healthy, PID {rng.randint(100, 65000)}",
        )
    return (
        "assistant",
        f"I upgraded {cv['product']} to {cv['version']} and reran ticket {cv['ticket']}; all {cv['count']} checks passed.",
    )
