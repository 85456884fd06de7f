"""``key = value`` pairs written in text, as value spans with their keys: ``.env`` and INI/TOML/YAML lines,
Python/JS dict literals, HTTP headers, ``key=value`` query and command-line arguments, XML elements, CSV
and Markdown table cells under their header and SQL ``INSERT`` values under their columns. Only pairs whose
key names a secret or a PII kind (``governance.redaction.key_context``) are kept, so each value can be
analysed with its key as context, as JSON values are.

The pair shapes are regexes Python's ``re`` tries at every position of a line; they run only on the lines
where one RE2 pass over the text found a key that may name something (a word of the vocabulary, its
letters perhaps split by ``_ . -``) right before an ``=`` or ``:``, so code and logs full of ``x: y`` that
name nothing cost one scan (``tests/governance/redaction/test_fast_path.py`` checks the spans against the
whole-text scans on every evaluation text).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from typing import NamedTuple

import re2

from governance.redaction.key_context import code_or_placeholder, key_stems, names_anything
from governance.redaction.sql_cells import sql_cells


class KeyedSpan(NamedTuple):
    key: str
    start: int
    end: int


_KEY = r"\.?[^\W\d][\w.\-]{0,63}"  # a letter or "_" first (after a dot: ".dockerconfigjson"), any script
_LINE_ASSIGN = re.compile(
    r"^[ \t]*(?:export[ \t]+|set[ \t]+)?[\"']?(?P<k>" + _KEY + r")[\"']?[ \t]*(?::|=|:=|=>)[ \t]*"
    r"(?P<q>[\"'`]?)(?P<v>[^\r\n]*?)(?P=q)[ \t]*,?[ \t]*$",
    re.MULTILINE,
)
# quotes may be escaped: a JSON document logged inside a string (body="{\"password\": \"…\"}")
_INLINE_QUOTED = re.compile(
    r"(?:(?<=[?&;\s(,{\[\\])|^)\\?[\"']?(?P<k>" + _KEY + r")\\?[\"']?[ \t]*(?:=|:)[ \t]*"
    r"\\?(?P<q>[\"'])(?P<v>(?:[^\"'\r\n\\]|\\(?![\"'])){1,512})\\?(?P=q)"
)
# after ":" too: an .npmrc line's "//registry.npmjs.org/:_authToken=…"
_INLINE_BARE = re.compile(r"(?:(?<=[?&;:\s(,{\[])|^)(?P<k>" + _KEY + r")=(?P<v>[^\s&\"',;)}\]]{1,512})")
_HEADER_ARG = re.compile(
    r"(?P<q>[\"'])(?P<k>[A-Za-z][A-Za-z0-9\-]{1,40}):[ \t]*(?P<v>[^\"'\r\n]{1,512})(?P=q)"
)
_XML_ELEMENT = re.compile(r"<(?P<k>" + _KEY + r")(?:[ \t][^<>\n]*)?>(?P<v>[^<>\r\n]{1,512})</(?P=k)>")
_MD_RULE = re.compile(r"^[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*$")
_CSV_HEAD = re.compile(r"^[ \t]*[^\W\d][\w .\-]*(?:[,;\t][ \t]*[^\W\d][\w .\-]*){1,30}[ \t]*$")


# What a line must hold for each pair shape to match in it (none of them matches across a line break):
# bit 1 "=", bit 2 ":", bit 4 a quote; a shape is tried on the lines holding all the bits of one entry.
_EQ, _COLON, _QUOTE = 1, 2, 4
_PAIR_SHAPES: tuple[tuple[re.Pattern[str], frozenset[int]], ...] = tuple(
    (rx, frozenset(bits for bits in range(8) if any(bits & w == w for w in wanted)))
    for rx, wanted in (
        (_LINE_ASSIGN, (_EQ, _COLON)),
        (_INLINE_QUOTED, (_EQ | _QUOTE, _COLON | _QUOTE)),
        (_INLINE_BARE, (_EQ,)),
        (_HEADER_ARG, (_COLON | _QUOTE,)),
    )
)


# A pair shape's key is a run of letters, digits, "_", "." and "-" right before its "=" or ":" (after an
# optional quote, backslash and blanks); on ASCII text its words are the run's letters and digits split at
# those separators and at case changes, so a key that names anything holds a stem of ``key_stems`` with
# separators allowed between its letters. A pair shape's match lies within one line, so only the lines
# holding such a run can yield a span: the others are not scanned (one RE2 pass finds the runs).
_KEY_SEP = r"[_.\-]*"
_NAMING_KEY = re2.compile(
    (
        "(?i)(?:"
        + "|".join(
            sorted(_KEY_SEP.join(re.escape(c) for c in stem) for stem in key_stems() if stem.isascii())
        )
        + r")[A-Za-z0-9_.\-]*\\?[\"']?[ \t]*[:=]"
    ).encode()
)  # on the ASCII bytes of a text: no position conversions


def _pair_lines(text: str) -> list[tuple[int, int, int]]:
    """The lines the pair shapes are scanned on: those holding "=" or ":" and, on ASCII text, a key that
    may name anything before it (on other text case folding and word characters are wider: all of them)."""
    if "=" not in text and ":" not in text:
        return []
    if not text.isascii():
        return _line_marks(text)
    hits = [m.start() for m in _NAMING_KEY.finditer(text.encode("ascii"))]
    if not hits:
        return []
    out: list[tuple[int, int, int]] = []
    i = 0
    for line in _line_marks(text):
        while i < len(hits) and hits[i] < line[0]:
            i += 1
        if i == len(hits):
            break
        if hits[i] <= line[1]:
            out.append(line)
    return out


def _line_marks(text: str) -> list[tuple[int, int, int]]:
    """(start, end, bits) of each line of ``text`` holding "=" or ":", in order."""
    out: list[tuple[int, int, int]] = []
    pos = 0
    for line in text.split("\n"):
        end = pos + len(line)
        bits = ("=" in line) | (":" in line) << 1
        if bits:
            out.append((pos, end, bits | ('"' in line or "'" in line) << 2))
        pos = end + 1
    return out


def _matches_in_lines(
    rx: re.Pattern[str], text: str, lines: list[tuple[int, int, int]], allowed: frozenset[int]
) -> Iterator[re.Match[str]]:
    """``rx.finditer(text)`` run only over the lines that can hold a match (runs of such lines scanned
    at once): a match never spans a line break, and a scan bounded to lines sees the real text around
    them (``^``, look-behinds), so the matches and their order are those of the whole-text scan, at a
    fraction of its cost on code and logs."""
    block_start = block_end = -1
    for start, end, bits in lines:
        if bits not in allowed:
            continue
        if start == block_end + 1:
            block_end = end
            continue
        if block_end >= 0:
            yield from rx.finditer(text, block_start, block_end)
        block_start, block_end = start, end
    if block_end >= 0:
        yield from rx.finditer(text, block_start, block_end)


def keyed_spans(text: str) -> list[KeyedSpan]:
    """``key = value`` pairs in text whose key names a secret or a PII kind, as value spans."""
    if not any(c in text for c in ("=", ":", ",", ";", "\t", "|", "</")):
        return []
    spans: dict[tuple[int, int], str] = {}
    lines = _pair_lines(text)
    for rx, allowed in _PAIR_SHAPES:
        for m in _matches_in_lines(rx, text, lines, allowed):
            key = m.group("k")
            start, end = m.span("v")
            if end > start and names_anything(key) and not code_or_placeholder(m.group("v")):
                spans.setdefault((start, end), key)
    if "</" in text:  # <password>…</password>, <phone type="work">…</phone>
        for m in _XML_ELEMENT.finditer(text):
            if names_anything(m["k"]) and not code_or_placeholder(m["v"]):
                spans.setdefault(m.span("v"), m["k"])
    cells = csv_cells(text) + (table_cells(text) if "|" in text else [])
    cells += [KeyedSpan(k, s, e) for k, s, e in sql_cells(text) if names_anything(k)]
    spans.update({(s, e): k for k, s, e in cells if (s, e) not in spans})
    return [KeyedSpan(k, s, e) for (s, e), k in sorted(spans.items())]


def csv_cells(text: str) -> list[KeyedSpan]:
    """Cells of a CSV/TSV block under a header row, for the columns whose header names something."""
    lines = text.split("\n")
    out: list[KeyedSpan] = []
    offset = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        # a header row holds a delimiter: a line without one is not matched against the header shape
        if ("," in line or ";" in line or "\t" in line) and i + 1 < len(lines) and _CSV_HEAD.match(line):
            delim = max(",;\t", key=line.count)
            header = [h.strip() for h in line.split(delim)]
            wanted = {j: h for j, h in enumerate(header) if names_anything(h)}
            pos = offset + len(line) + 1
            j = i + 1
            while wanted and j < len(lines) and lines[j].count(delim) >= len(header) - 1 and lines[j].strip():
                out.extend(_row_cells(lines[j], pos, delim, wanted))
                pos += len(lines[j]) + 1
                j += 1
            if j > i + 1:
                offset = pos
                i = j
                continue
        offset += len(line) + 1
        i += 1
    return out


def table_cells(text: str) -> list[KeyedSpan]:
    """Cells of a Markdown table (a header row, a ``|---|`` rule, then rows), for the columns whose header
    names something."""
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    out: list[KeyedSpan] = []
    i = 0
    while i + 1 < len(lines):
        if "|" not in lines[i] or not _MD_RULE.match(lines[i + 1]) or "|" not in lines[i + 1]:
            i += 1
            continue
        wanted = {j: h for j, (h, _, _) in enumerate(_pipe_cells(lines[i])) if names_anything(h)}
        j = i + 2
        while j < len(lines) and "|" in lines[j]:
            for col, (cell, s, e) in enumerate(_pipe_cells(lines[j])):
                if col in wanted and cell:
                    out.append(KeyedSpan(wanted[col], starts[j] + s, starts[j] + e))
            j += 1
        i = j
    return out


def _pipe_cells(row: str) -> list[tuple[str, int, int]]:
    """(stripped text, start, end) of each cell of a ``| a | b |`` row (outer pipes optional)."""
    bounds = [k for k, c in enumerate(row) if c == "|" and (k == 0 or row[k - 1] != "\\")]
    if not bounds:
        return []
    if row[: bounds[0]].strip():
        bounds.insert(0, -1)
    if row[bounds[-1] + 1 :].strip():
        bounds.append(len(row))
    cells = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        raw = row[a + 1 : b]
        lead = len(raw) - len(raw.lstrip())
        text = raw.strip()
        cells.append((text, a + 1 + lead, a + 1 + lead + len(text)))
    return cells


def _row_cells(row: str, base: int, delim: str, wanted: dict[int, str]) -> list[KeyedSpan]:
    cells = next(csv.reader(io.StringIO(row), delimiter=delim), [])
    out: list[KeyedSpan] = []
    cursor = 0
    for j, cell in enumerate(cells):
        at = row.find(cell, cursor) if cell else -1
        if at < 0:
            continue
        cursor = at + len(cell)
        if j in wanted and cell.strip():
            out.append(KeyedSpan(wanted[j], base + at, base + at + len(cell)))
    return out
