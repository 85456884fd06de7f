"""Keys name their values: own key, sibling key, config lines, headers and CSV columns, in any key style."""

from __future__ import annotations

import json

import pytest

from governance.redaction import Redactor
from governance.redaction.key_context import code_or_placeholder, names_kind, names_secret
from governance.redaction.keyed_spans import keyed_spans


@pytest.mark.parametrize(
    ("key", "verdict"),
    [("db_url_password", "strong"), ("dbUrlPassword", "strong"), ("DB-URL-PASSWORD", "strong"),
     ("STRIPE_WEBHOOK_SECRET", "strong"), ("secretAccessKey", "strong"), ("x-api-key", "strong"),
     ("AccountKey", "strong"), ("HF_TOKEN", "weak"), ("token", "weak"), ("token_count", ""), ("max_tokens", ""),
     ("password_policy", ""), ("secret_name", ""), ("token_type", ""), ("cache_key", ""), ("partition_key", ""),
     ("PGPASSWORD", "strong"), ("REDISPASSWD", "strong"), ("clientsecret", "strong"), ("pgpassword_file", "")],
)  # fmt: skip
def test_names_secret_in_any_key_style(key: str, verdict: str) -> None:
    assert names_secret(key) == verdict


def test_names_kind() -> None:
    assert names_kind("callback_number") == {"PHONE_NUMBER"}
    assert names_kind("payment_card") == {"CREDIT_CARD"}
    assert "PERSON" in names_kind("customer_name") and "PERSON" in names_kind("last_name")
    assert names_kind("product_name") == set() and names_kind("table_name") == set()


def test_code_and_placeholders_are_not_values() -> None:
    for v in (
        "os.environ['API_KEY']",
        "settings.SECRET",
        "get_password()",
        "${DB_PASS}",
        "your-key-here",
        "str",
    ):
        assert code_or_placeholder(v), v
    assert not code_or_placeholder("Vq7!mZ2#rT9x")


def test_keyed_spans_in_config_header_query_and_csv() -> None:
    text = (
        '[default]\nregion = eu-west-1\ntoken = "AKIAQZ7W3XR5T2YU4PLM"\n'
        "settings = {'HF_TOKEN': 'SK2c75b04d'}\n"
        "curl -H \"X-Api-Key: whsec_QT2\" 'https://x/export?api_key=abc123&limit=5'\n"
        "id,phone,created\n657,611.416.2497,2023-08-16\n"
    )
    got = {(k.key, text[k.start : k.end]) for k in keyed_spans(text)}
    assert {("token", "AKIAQZ7W3XR5T2YU4PLM"), ("HF_TOKEN", "SK2c75b04d"), ("X-Api-Key", "whsec_QT2"),
            ("api_key", "abc123"), ("phone", "611.416.2497")} <= got  # fmt: skip
    assert not any(k == "region" for k, _ in got)


def test_value_named_by_a_sibling_key_is_redacted(plain: Redactor) -> None:
    for body in (
        {"field": "db_url_password", "value": "orange!4411?"},
        {"op": "set", "key": "pwd", "val": "aq!4~1jv+o#opUL", "env": "prod"},
        {
            "settings": [
                {"name": "region", "value": "us-east-2"},
                {"name": "hmac_secret", "value": "8fd2d69eff49"},
            ]
        },
    ):
        out, _, counts = plain.redact_payload(json.dumps(body))
        assert counts == {"CREDENTIAL": 1}, (body, out)
        assert "us-east-2" in out or "region" not in json.dumps(body)


def test_secret_under_its_key_in_config_text(plain: Redactor) -> None:
    for text, value in (
        ("$ cat config.toml\n[service]\ndb_url_password = 'orange!4411?'\nretries = 3", "orange!4411?"),
        ("SESSION_SECRET=804abf9a805c7d6e6548c87ca5895897\nPORT=443", "804abf9a805c7d6e6548c87ca5895897"),
        ("database:\n  host: db.internal\n  passwd: V9ZMq~teIjPQ~J\n", "V9ZMq~teIjPQ~J"),
    ):
        out, _, counts = plain.redact_text(text)
        assert value not in out and counts, out
    # code that names a secret without holding one is left alone
    code = "api_key = os.environ['OPENAI_API_KEY']\npassword: str = Field(..., min_length=8)"
    assert plain.redact_text(code)[0] == code
