"""Values carried apart from their name or in another encoding: percent-encoded and intranet addresses, a
lookup's default and a header pair, password-file lines, card verification values and one-time codes,
numbers under secret keys and two-string pairs in tool arguments. Each with the near misses that stay."""

from __future__ import annotations

import json

import pytest

from governance.config import RedactionConfig
from governance.redaction import Redactor
from governance.redaction.key_context import names_secret, pair_value_context
from sluice.events import StepEvent, encode
from tests.trainers.live.builders import step


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor.from_config(RedactionConfig())


def redacted(redactor: Redactor, text: str) -> str:
    return redactor.redact_text(text)[0]


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("https://app.example.com/reset?email=jane.doe%40example.com&x=1", "jane.doe%40example.com"),
        ("unsubscribe?to=ops%2Bbilling%40acme.io", "ops%2Bbilling%40acme.io"),
        ("write to alice@mail.corp.internal today", "alice@mail.corp.internal"),
        ("ops@acme.local is the on-call list", "ops@acme.local"),
        ('<a href="mailto:sales@acme-corp.example">mail</a>', "sales@acme-corp.example"),
        ("db_pass = os.getenv('DB_PASS', 'Fallb4ckP@ssw0rd!')", "Fallb4ckP@ssw0rd!"),
        ('token = ENV.fetch("GITHUB_TOKEN", "x9Qm2Lk7Pw4Rt8Zs")', "x9Qm2Lk7Pw4Rt8Zs"),
        ('headers = [("X-Api-Key", "3f9a7c2e5b8d4f1a6c9e2b5d8f1a4c7e")]', "3f9a7c2e5b8d4f1a6c9e2b5d8f1a4c7e"),
        ("const pw = process.env.DB_PASSWORD || 'Sup3r-s3cret!';", "Sup3r-s3cret!"),
        ("~/.pgpass: db.internal:5432:orders:app_user:Tr0ub4dor&3xyz", "Tr0ub4dor&3xyz"),
        ("reach me: john [at] example [dot] com", "john [at] example [dot] com"),
        ("write to jane(at)acme.io or ops{at}corp{dot}internal", "jane(at)acme.io"),
        ("IBAN de89-3704-0044-0532-0130-00 for the refund", "0532-0130"),
        ("iban: gb82west12345698765432", "gb82west12345698765432"),
    ],
)
def test_carried_values_are_redacted(redactor: Redactor, text: str, secret: str) -> None:
    out = redacted(redactor, text)
    assert secret not in out, out


def test_a_password_file_line_loses_its_password_whatever_it_looks_like(redactor: Redactor) -> None:
    out = redacted(redactor, "localhost:5432:*:postgres:postgres\n")
    assert out.startswith("localhost:5432:*:postgres:") and not out.rstrip().endswith(":postgres"), out


@pytest.mark.parametrize(
    "text",
    [
        "fields = ('username', 'password', 'email')",
        'fields = ["password", "confirm_password"]',
        'headers = [("Content-Type", "application/json")]',
        'os.getenv("DB_PASS", "")',
        'os.getenv("API_KEY", "changeme")',
        "git clone git@github.com:org/repo.git",
        "npm install @types/node@18.0.0",
        "elapsed 12:30:45:67:8900",
        "build 2024:10:05:12:3000 done, mac 00:1A:2B:3C:4D:5E",
        "percent sign 100%40 of the time",
        "the format (at least 3) [at] most, meet me (at) noon, arr[at] index",
        "ref de89 3704 0044 0532 0130 00 without the word",
        "iban de89 3704 0044 0532 0130 01 with a bad checksum",
    ],
)
def test_near_misses_stay(redactor: Redactor, text: str) -> None:
    assert redacted(redactor, text) == text


def test_a_lower_case_iban_under_its_key_is_redacted(redactor: Redactor) -> None:
    assert "0532" not in redactor.redact_text("de89 3704 0044 0532 0130 00", context=["iban"])[0]
    assert redactor.redact_text("de89 3704 0044 0532 0130 00", context=["note"])[0].startswith("de89")


def test_verification_values_and_one_time_codes_name_secrets() -> None:
    for key in (
        "cvv",
        "cvc2",
        "security_code",
        "otp",
        "totp",
        "mfa_code",
        "verification_code",
        "backup_codes",
    ):
        assert names_secret(key) == "strong", key
    for key in ("zip_code", "country_code", "status_code", "otp_length", "error_code"):
        assert names_secret(key) == "", key


def test_pair_context_needs_a_token_after_a_secret_name() -> None:
    assert pair_value_context("X-Api-Key", "3f9a7c2e5b8d4f1a") == ["X-Api-Key"]
    assert pair_value_context("password", "email") is None  # a list of field names
    assert pair_value_context("phone", "anything") == ["phone"]  # a PII kind: the value's own shape decides
    assert pair_value_context("Content-Type", "application/json") is None


def _with_tool(redactor: Redactor, arguments: dict) -> dict:
    data = json.loads(encode(step(0, [1, 2], [3])))
    data["action"]["choices"][0]["message"]["tool_calls"] = [
        {"id": "c1", "name": "charge", "arguments": json.dumps(arguments)}
    ]
    event, _ = redactor.redact_data(data)
    assert isinstance(event, StepEvent)
    return json.loads(event.action.choices[0].message.tool_calls[0].arguments)


def test_numbers_under_secret_keys_and_header_pairs_in_tool_arguments(redactor: Redactor) -> None:
    args = _with_tool(
        redactor,
        {"card_number": "4111 1111 1111 1111", "cvv": 123, "pin": 4821, "otp": 482913, "amount": 20,
         "headers": [["X-Api-Key", "3f9a7c2e5b8d4f1a6c9e2b5d8f1a4c7e"], ["Accept", "text/plain"]],
         "fields": ["password", "email"], "retries": 3},
    )  # fmt: skip
    assert all(isinstance(args[k], str) and str(v) not in args[k] for k, v in
               (("cvv", 123), ("pin", 4821), ("otp", 482913)))  # fmt: skip
    assert args["headers"][0][0] == "X-Api-Key" and "3f9a7c2e" not in args["headers"][0][1]
    assert args["headers"][1] == ["Accept", "text/plain"]
    assert args["fields"] == ["password", "email"] and args["amount"] == 20 and args["retries"] == 3
