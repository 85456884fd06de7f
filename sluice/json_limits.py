"""Parsing untrusted JSON with a nesting limit: pathological nesting is a clear error, never a crash.

Python's JSON decoder recurses per level and raises ``RecursionError`` somewhere near 1,000 levels (and
code that walks the result may recurse again). ``loads_bounded`` refuses anything nested deeper than
``max_depth`` with ``JsonTooDeep`` (a ``ValueError``): bodies with fewer brackets than the limit are
parsed directly (one C-speed count), others are measured with an iterative scan first.

    loads_bounded('[[[1]]]', max_depth=2)   # raises JsonTooDeep
"""

from __future__ import annotations

import json
from typing import Any

MAX_JSON_DEPTH = 128


class JsonTooDeep(ValueError):
    """The document nests arrays/objects deeper than allowed."""

    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth
        super().__init__(f"JSON nested deeper than {max_depth} levels")


def nesting_depth(text: str, stop_at: int) -> int:
    """Deepest array/object nesting of ``text`` (strings skipped), counting no further than ``stop_at``."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > stop_at:
                    return deepest
        elif ch in "]}":
            depth -= 1
    return deepest


def loads_bounded(text: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` that raises ``JsonTooDeep`` past ``max_depth`` levels (``json.JSONDecodeError`` as usual)."""
    if text.count("[") + text.count("{") > max_depth and nesting_depth(text, max_depth) > max_depth:
        raise JsonTooDeep(max_depth)
    try:
        return json.loads(text)
    except RecursionError:
        raise JsonTooDeep(max_depth) from None
