"""JSON payloads are walked value by value with the key as context; content parts keep their structure."""

from __future__ import annotations

import json

from governance.redaction import Redactor


def test_key_context_in_json_and_in_the_same_text_as_one_string(plain: Redactor) -> None:
    payload = json.dumps({"user": {"msisdn": "4158675309", "tin": "536228761", "clientSecret": "hunter2"}})
    out, _, counts = plain.redact_payload(payload)
    assert json.loads(out) == {
        "user": {"msisdn": "<PHONE_NUMBER_1>", "tin": "<US_SSN_1>", "clientSecret": "<CREDENTIAL_1>"}
    }
    assert counts == {"PHONE_NUMBER": 1, "US_SSN": 1, "CREDENTIAL": 1}
    raw, _, raw_counts = plain.redact_text(payload)  # one string: its "key": "value" pairs still give context
    assert "4158675309" not in raw and "hunter2" not in raw and "536228761" not in raw
    assert raw_counts == counts


def test_secret_named_keys(plain: Redactor) -> None:
    payload = {"clientSecret": "abc", "DB_PASSWORD": "p@ss w0rd", "x-api-key": "k-1", "token_count": 15234,
               "max_tokens": "1024", "password": None, "api_key": "", "token": "Hello", "secret": "x9-Kq2_Lm0pZ"}  # fmt: skip
    out, _, counts = plain.redact_payload(json.dumps(payload))
    got = json.loads(out)
    assert [got["clientSecret"], got["DB_PASSWORD"], got["x-api-key"]] == [
        f"<CREDENTIAL_{i}>" for i in (1, 2, 3)
    ]
    assert counts == {"CREDENTIAL": 4} and got["token"] == "Hello" and got["secret"] == "<CREDENTIAL_4>"
    assert (
        got["token_count"] == 15234
        and got["max_tokens"] == "1024"
        and got["password"] is None
        and got["api_key"] == ""
    )


def test_numbers_nested_json_and_keys(plain: Redactor) -> None:
    inner = json.dumps({"email": "a@example.com"})
    payload = {
        "card": 4111111111111111,
        "count": 12,
        "ok": True,
        "raw": inner,
        "b@example.com": {"x": [1, 2]},
    }
    out, _, counts = plain.redact_payload(json.dumps(payload))
    got = json.loads(out)
    assert got["card"] == "<CREDIT_CARD_1>" and got["count"] == 12 and got["ok"] is True
    assert json.loads(got["raw"]) == {"email": "<EMAIL_ADDRESS_1>"}
    assert "<EMAIL_ADDRESS_2>" in got and counts == {"CREDIT_CARD": 1, "EMAIL_ADDRESS": 2}


def test_clean_payload_is_returned_byte_for_byte(plain: Redactor) -> None:
    payload = '{"a":   1,\n "path": "src/app.py", "version": "1.2.3"}'
    out, _, counts = plain.redact_payload(payload)
    assert out == payload and not counts


def test_compact_payload_stays_compact(plain: Redactor) -> None:
    out, _, _ = plain.redact_payload('{"to":"a@example.com","n":1}')
    assert out == '{"to":"<EMAIL_ADDRESS_1>","n":1}'


def test_invalid_json_falls_back_to_text(plain: Redactor) -> None:
    out, _, counts = plain.redact_payload('{"to": "a@example.com", "trunc')
    assert out == '{"to": "<EMAIL_ADDRESS_1>", "trunc' and counts == {"EMAIL_ADDRESS": 1}


def test_content_parts_keep_structure(plain: Redactor) -> None:
    from governance.redaction.redaction_pass import PART_STRUCTURAL_KEYS

    p = plain._pass(None)
    parts = [
        {"type": "text", "text": "mail a@example.com", "cache_control": {"type": "ephemeral"}},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJDQGV4YW1wbGUuY29t"}},
        {"type": "tool_use", "id": "toolu_1", "name": "send", "input": {"to": "b@example.com", "phone": 4158675309}},
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": '{"ok": "c@example.com"}'}]},
    ]  # fmt: skip
    out = p.parts(parts)
    assert out[0] == {
        "type": "text",
        "text": "mail <EMAIL_ADDRESS_1>",
        "cache_control": {"type": "ephemeral"},
    }
    assert out[1] == parts[1]
    assert (
        out[2]["input"] == {"to": "<EMAIL_ADDRESS_2>", "phone": "<PHONE_NUMBER_1>"}
        and out[2]["id"] == "toolu_1"
    )
    assert json.loads(out[3]["content"][0]["text"]) == {"ok": "<EMAIL_ADDRESS_3>"}
    assert {"type", "id", "tool_use_id"} <= PART_STRUCTURAL_KEYS
