"""Surfaces: typed reads of the request parts protocol models keep as dicts (a wrong type is a 400).

The parts are messages, content blocks, input items and tools: a part of the wrong type is a 400 that
names it, never a crash or a silent rewrite (``str(...)`` of an object, a dropped field).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pipeline.proxy.exceptions import ApiError


def bad_request(where: str, why: str) -> ApiError:
    """The 400 for the request part at ``where`` (a JSON path such as ``messages[2].content[0]``)."""
    return ApiError(400, f"{where}: {why}", param=where)


def string_field(part: dict[str, Any], key: str, where: str, *, required: bool = True) -> str:
    """``part[key]`` as a string; absent or null is ``""`` unless ``required``."""
    value = part.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise bad_request(f"{where}.{key}", f"must be a string, got {_kind(value)}")
    return value


def object_field(part: dict[str, Any], key: str, where: str, *, required: bool = True) -> dict[str, Any]:
    """``part[key]`` as a JSON object; absent or null is ``{}`` unless ``required``."""
    value = part.get(key)
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        raise bad_request(f"{where}.{key}", f"must be an object, got {_kind(value)}")
    return value


def object_part(part: Any, where: str) -> dict[str, Any]:
    """A list element that must be a JSON object."""
    if not isinstance(part, dict):
        raise bad_request(where, f"must be an object, got {_kind(part)}")
    return part


def joined_text(
    content: Any,
    where: str,
    is_text: Callable[[dict[str, Any]], bool],
    *,
    others: Literal["skip", "refuse"] = "skip",
) -> str:
    """The text of ``content``: a string as it is, null as ``""``, a list of parts as the ``text`` of the
    parts ``is_text`` picks, joined; any other part is skipped, or with ``others="refuse"`` a 400."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if not isinstance(content, list):
        raise bad_request(where, "must be a string or a list of content parts")
    texts = []
    for i, part in enumerate(content):
        at = f"{where}[{i}]"
        if is_text(object_part(part, at)):
            texts.append(string_field(part, "text", at))
        elif others == "refuse":
            raise bad_request(at, "only text parts can be translated here")
    return "".join(texts)


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)
