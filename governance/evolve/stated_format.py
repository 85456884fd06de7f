"""The format a tool's error message states, as a JSON-Schema constraint on the argument (pure).

Tools that reject an argument usually say what they accept: a list of values (``priority must be one of:
low, normal, high``), a date or time template (``expected YYYY-MM-DD``, ``use DD/MM/YYYY``, ``HH:MM``) or
a named format (``not an ISO 8601 date``). ``stated_constraint`` turns such a sentence into ``{"enum":
[...]}`` or ``{"pattern": "^...$"}``; ``stated_argument`` also finds which argument the message is about
(the one it names, else the only one the failing calls sent). Messages that state nothing give None.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

_ONE_OF = re.compile(r"\b(?:one of|any of|either)\b\s*[:=]?\s*([^.;\n]+)", re.IGNORECASE)
_LIST_SPLIT = re.compile(r"\s*(?:,|\||/|\bor\b)\s*")
_VALUE = re.compile(r"[\w][\w\-+.]{0,39}")
_UNITS = {"YYYY": 4, "YY": 2, "MM": 2, "DD": 2, "HH": 2, "hh": 2, "mm": 2, "ss": 2, "SS": 2}
_SEPARATORS = {"-": "-", "/": "/", ":": ":", ".": r"\.", " ": " ", "T": "T"}
_TEMPLATE = re.compile(r"(?<![\w])([YMDHhms]{2,4}(?:[-/:. T][YMDHhms]{2,4})+)(?![\w])")
_NAMED = (
    (re.compile(r"\biso[ -]?8601 (?:date[ -]?time|datetime)\b", re.IGNORECASE), "YYYY-MM-DDTHH:mm:ss"),
    (re.compile(r"\biso(?:[ -]?8601)? date\b", re.IGNORECASE), "YYYY-MM-DD"),
)


def template_pattern(template: str) -> str | None:
    """``YYYY-MM-DD`` -> ``^\\d{4}-\\d{2}-\\d{2}$``; None when a letter run is not a date/time unit."""
    out = []
    for part in re.split(r"([-/:. T])", template):
        if part in _SEPARATORS:
            out.append(_SEPARATORS[part])
        elif part in _UNITS:
            out.append(rf"\d{{{_UNITS[part]}}}")
        else:
            return None
    return "^" + "".join(out) + "$"


def _one_of(text: str) -> list[str] | None:
    m = _ONE_OF.search(text)
    if not m:
        return None
    values = []
    for raw in _LIST_SPLIT.split(m.group(1).strip()):
        v = raw.strip().strip("'\"`[](){}").strip()
        if v and _VALUE.fullmatch(v) and v not in values:
            values.append(v)
    return values if len(values) >= 2 else None


def stated_constraint(text: str) -> dict[str, Any] | None:
    """The constraint the message states: ``{"enum": [...]}``, ``{"pattern": ...}``, or None."""
    values = _one_of(text)
    if values:
        return {"enum": values}
    for m in _TEMPLATE.finditer(text):
        pattern = template_pattern(m.group(1))
        if pattern:
            return {"pattern": pattern}
    for rx, template in _NAMED:
        if rx.search(text):
            return {"pattern": template_pattern(template)}
    return None


def stated_argument(
    errors: Iterable[str], failing_args: list[dict[str, Any]]
) -> tuple[str, dict[str, Any], str] | None:
    """(argument, constraint, the sentence that states it) from the first error message that states a
    format for an argument the failing calls sent: the argument it names, else their only argument."""
    keys = sorted({k for a in failing_args for k in a})
    for err in errors:
        constraint = stated_constraint(err)
        if constraint is None:
            continue
        named = [k for k in keys if re.search(rf"(?<![\w]){re.escape(k)}(?![\w])", err)]
        key = named[0] if len(named) == 1 else (keys[0] if len(keys) == 1 else None)
        if key is not None:
            return key, constraint, " ".join(err.split())[:200]
    return None
