"""Values of a SQL ``INSERT … (columns) VALUES (…), (…)`` statement, each under its column's name.

An agent's tool output or a log often carries the statement it ran: ``INSERT INTO patients (first_name,
date_of_birth) VALUES ('Ana', '1954-08-13')``. Each value is analysed with its column as the key, as a
JSON value is with its key (``keyed_spans.keyed_spans`` calls this).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_INSERT = re.compile(r"(?is)\binsert\s+into\s+[\w.`\"\[\]]+\s*\((?P<cols>[^()]{1,2000})\)\s*values\s*")
_TUPLE_START = re.compile(r"\s*,?\s*\(")
_VALUE = re.compile(r"\s*(?:'(?P<q>(?:[^']|'')*)'|(?P<b>[^,()\s']+))\s*(?P<sep>[,)])")


def sql_cells(text: str) -> Iterator[tuple[str, int, int]]:
    """(column, start, end) of each quoted or bare value of each row of each INSERT in ``text``."""
    if "INSERT" not in text and "insert" not in text and "Insert" not in text:
        return
    for m in _INSERT.finditer(text):
        cols = [c.strip().strip('`"[]') for c in m["cols"].split(",")]
        pos = m.end()
        while (row := _TUPLE_START.match(text, pos)) is not None:
            pos, i = row.end(), 0
            while (v := _VALUE.match(text, pos)) is not None:
                span = v.span("q") if v["q"] is not None else v.span("b")
                if i < len(cols) and span[1] > span[0]:
                    yield cols[i], span[0], span[1]
                pos, i = v.end(), i + 1
                if v["sep"] == ")":
                    break
            else:
                break
