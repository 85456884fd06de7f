"""Compact JSON text, exactly ``json.dumps(value, separators=(",", ":"), ...)``, for hot paths.

``json.JSONEncoder.encode`` builds a new C encoder object on every call, which costs more than encoding a
message or a short list; ``compact_json`` builds it once. The output is the standard library's own, byte
for byte (the same C encoder), so hashes over it stay what they were. There is no check for circular
references: give it data parsed from JSON or dumped by a model, never a structure that contains itself.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable
from typing import Any


def compact_json(*, sort_keys: bool = False, ensure_ascii: bool = True) -> Callable[[Any], str]:
    """A function that writes one value as compact JSON (``","`` and ``":"``, no spaces)."""
    make = json.encoder.c_make_encoder
    if make is None:  # an interpreter without the C accelerator
        return json.JSONEncoder(sort_keys=sort_keys, ensure_ascii=ensure_ascii, separators=(",", ":")).encode
    strings = json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring
    encode = make(None, None, strings, None, ":", ",", sort_keys, False, True)

    def dumps(value: Any) -> str:
        if isinstance(value, str):
            return strings(value)
        return "".join(encode(value, 0))

    return dumps
