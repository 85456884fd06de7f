"""Canonical message forms: recorded shape, lenient link keys, fingerprints (pure)."""

from __future__ import annotations

import hashlib
import json

import pytest

from pipeline.proxy.exceptions import ApiError
from pipeline.proxy.linking.canonical import (
    event_message,
    harness_fingerprint,
    link_chain,
    link_extend,
    link_key,
)
from sluice.events import message_hash


def test_event_message_flattens_tool_calls_and_drops_noise() -> None:
    raw = {
        "role": "assistant",
        "content": None,
        "refusal": None,
        "annotations": [],
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}, "index": 0}
        ],
        "reasoning_content": "thought",
    }
    msg = event_message(raw, "messages[0]")
    assert msg.model_dump(exclude_none=True) == {
        "role": "assistant",
        "tool_calls": [{"id": "c1", "type": "function", "name": "f", "arguments": '{"a": 1}'}],
        "reasoning_content": "thought",
    }


@pytest.mark.parametrize(
    ("raw", "param"),
    [
        ("hello", "messages[2]"),
        ({"role": "robot", "content": "x"}, "messages[2].role"),
        ({"role": "assistant", "tool_calls": [{"function": {}}]}, "messages[2].tool_calls[0].function"),
        ({"role": "user", "content": 5}, "messages[2].content"),
    ],
)
def test_event_message_names_the_bad_field(raw: object, param: str) -> None:
    with pytest.raises(ApiError) as err:
        event_message(raw, "messages[2]")
    assert err.value.status == 400 and err.value.param.startswith(param)


def test_link_key_is_lenient_where_sdks_differ() -> None:
    a = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": '{"b": 2, "a": 1}'}}],
    }
    b = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"a":1,"b":2}'}}
        ],
    }
    assert link_key(a) == link_key(b)
    parts = {"role": "user", "content": [{"type": "text", "text": "he"}, {"type": "text", "text": "llo"}]}
    assert link_key(parts) == link_key({"role": "user", "content": "hello"})
    assert link_key({"role": "user", "content": "hello"}) != link_key({"role": "user", "content": "hello!"})


def test_link_chain_extends() -> None:
    msgs = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    chain = link_chain(msgs)
    assert len(chain) == 3 and chain[0] == b""
    assert link_extend(chain[1], msgs[1]) == chain[2]


def test_exact_hash_matches_the_event_contract() -> None:
    msgs = [
        event_message({"role": "user", "content": "a"}, "m"),
        event_message({"role": "assistant", "content": "b"}, "m"),
    ]
    assert message_hash(msgs) == message_hash(msgs[1:], message_hash(msgs[:1]))


def test_exact_hash_is_sha256_over_each_messages_sorted_json_dump() -> None:
    """The promise ``Observation.prefix_hash`` makes, written out plainly, for text in and out of ASCII,
    content parts, tool calls and fields the protocol does not name."""
    msgs = [
        event_message({"role": "system", "content": 'Sé 漢字 \u2028 "q"'}, "m"),
        event_message(
            {"role": "user", "content": [{"type": "text", "text": "hi", "extra": None}], "name": "n"}, "m"
        ),
        event_message(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
                "x_vendor": {"b": 1.5, "a": [None, 1e-7, 1e20]},
            },
            "m",
        ),
    ]
    h = "seed"
    for m in msgs:
        body = json.dumps(m.model_dump(mode="json", exclude_none=True), sort_keys=True, separators=(",", ":"))
        h = hashlib.sha256((h + body).encode()).hexdigest()
    assert message_hash(msgs, "seed") == h


def test_harness_fingerprint_only_from_system_prompts() -> None:
    a = [{"role": "system", "content": "S"}, {"role": "user", "content": "x"}]
    b = [{"role": "system", "content": "S"}, {"role": "user", "content": "y"}]
    assert (
        harness_fingerprint(a)
        == harness_fingerprint(b)
        != harness_fingerprint([{"role": "system", "content": "T"}])
    )
    assert harness_fingerprint([{"role": "user", "content": "x"}]) is None
    assert json.dumps(harness_fingerprint(a))
