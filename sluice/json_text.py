"""Text that may be JSON: ``loads_or_none`` is ``json.loads`` that answers None where it would raise.

Agents' tool answers and arguments are often JSON and often only look like it (a log line
``[263] build ... ok``, ``{name}`` in a template). ``json.loads`` tells the second kind by raising, and a
``JSONDecodeError`` costs more than the parse (it counts lines and columns for its message). This reads
the first value with the same decoder and looks at what follows it, as ``json.loads`` does, without
building the exception for text that goes on after a value.
"""

from __future__ import annotations

import json
from json.decoder import WHITESPACE
from typing import Any

_DECODER = json.JSONDecoder()


def loads_or_none(text: str) -> Any | None:
    """``json.loads(text)``, or None where that raises ``ValueError`` (JSON ``null`` also gives None)."""
    try:
        value, end = _DECODER.raw_decode(text, WHITESPACE.match(text, 0).end())  # type: ignore[union-attr]
    except ValueError:
        return None
    return value if WHITESPACE.match(text, end).end() == len(text) else None  # type: ignore[union-attr]
