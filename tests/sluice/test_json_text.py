"""``loads_or_none`` answers what ``json.loads`` answers, and None wherever ``json.loads`` raises."""

from __future__ import annotations

import json

import pytest

from sluice.json_text import loads_or_none

TEXTS = [
    '{"path": "src/app.py", "content": "x"}',
    ' \n\t{"a": [1, 2.5, -3e2, true, null, "\\u00e9"]}\r\n ',
    "[263] build ... ok (0.96s)\n[631] merge ... ok",
    "[1, 2] trailing",
    "{name}",
    "[",
    "{}",
    "[]",
    '{"a": 1}\u00a0',  # a space JSON does not know: extra data
    "\ufeff{}",  # a byte order mark: json.loads refuses it
    '{"n": NaN, "i": Infinity}',
    '{"big": 123456789012345678901234567890}',
    '[{"deep": [[[{"x": "y"}]]]}]',
    '{"a": 1} {"b": 2}',
    '"just a string"',
    "",
    "   ",
    "null",
]


def _loads(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return None


@pytest.mark.parametrize("text", TEXTS)
def test_same_answer_as_json_loads(text: str) -> None:
    assert loads_or_none(text) == _loads(text)
    assert type(loads_or_none(text)) is type(_loads(text))
