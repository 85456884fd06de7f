"""compact_json writes what json.dumps writes with the same options, byte for byte."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sluice.compact_json import compact_json

VALUES: list[Any] = [
    "plain",
    'Sé 漢字 \u2028 "q" \\ \x01',
    ["user", None, "x", [1, 2.5, -0.0, 1e20, 1e-7, 10**30, True, False]],
    {"b": {"d": 1, "c": [None, {"z": "é", "a": float("nan")}]}, "a": float("inf")},
    [],
    {},
    7,
]


@pytest.mark.parametrize("sort_keys", [True, False])
@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_the_same_text_as_json_dumps(sort_keys: bool, ensure_ascii: bool) -> None:
    dumps = compact_json(sort_keys=sort_keys, ensure_ascii=ensure_ascii)
    for value in VALUES:
        expected = json.dumps(value, sort_keys=sort_keys, ensure_ascii=ensure_ascii, separators=(",", ":"))
        assert dumps(value) == expected


def test_a_value_json_can_not_write_is_refused() -> None:
    with pytest.raises(TypeError):
        compact_json()({"k": object()})
