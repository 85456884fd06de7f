"""One redaction pass (one event or one text): walks strings, JSON payloads and content parts.

JSON payloads (tool-call arguments, tool results that parse as JSON) are walked value by value with
the key as Presidio ``context``: recall on raw JSON strings is much lower than on values analysed with
their key (``{"mobile": "2125550143"}``, ``{"password": "hunter2"}``). Integers with 7+ digits are
analysed too (phone and card numbers are often sent as JSON numbers), and any integer under a key that
names a secret (``{"pin": 4821}``, ``{"cvv": 123}``); a redacted number becomes a string. The second string
of a two-string list is analysed with the first as its key when the first names a secret or a PII kind
(``["X-Api-Key", "3f9a…"]``, a header list). A payload with nothing to redact is returned byte for byte; one that changed is re-serialised.
A value under a generic key (``value``, ``val``, ``number``) also gets the names its siblings give it
(``{"field": "db_url_password", "value": …}``, ``{"type": "AADHAAR", "number": …}``). Structural fields of content parts (``type``, ids, ``cache_control``, base64 ``data``) are skipped.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

from governance.redaction.exceptions import RedactionTimeout
from governance.redaction.key_context import names_a_secret, names_anything, pair_value_context
from governance.redaction.operators import OperatorContext, OperatorTable
from governance.redaction.text_analyzer import TextAnalyzer
from governance.redaction.text_redactor import apply_operators
from sluice.json_text import loads_or_none

PART_STRUCTURAL_KEYS = frozenset(
    {
        "type",
        "id",
        "tool_use_id",
        "tool_call_id",
        "cache_control",
        "media_type",
        "mime_type",
        "signature",
        "data",
    }
)
MIN_NUMBER_DIGITS = 7
# {"field": "db_password", "value": "…"}: the name sits in a sibling, the value under a generic key.
# {"type": "AADHAAR", "number": "…"}: a document's kind beside its number.
NAME_KEYS = frozenset({"field", "name", "key", "param", "parameter", "setting", "variable", "var", "label",
                       "attribute", "property", "prop", "option", "header", "id", "path", "k", "type", "kind",
                       "document_type", "doc_type", "id_type", "scheme"})  # fmt: skip
VALUE_KEYS = frozenset(
    {"value", "val", "v", "data", "content", "secret", "text", "new_value", "default", "values", "number",
     "no", "document_number", "id_number", "identifier"}
)  # fmt: skip


def _names_a_secret(context: list[str] | None) -> bool:
    """Whether the key a value sits under names a secret outright (``{"pin": 4821}``, ``{"cvv": 123}``)."""
    return bool(context) and any(names_a_secret(c) for c in context or ())


def sibling_names(obj: dict[str, Any]) -> list[str]:
    """Names given by sibling fields that name a secret or PII kind (``{"field": "db_url_password"}``)."""
    if len(obj) > 12 or VALUE_KEYS.isdisjoint(obj):
        return []
    return [
        v
        for k, v in obj.items()
        if k in NAME_KEYS and isinstance(v, str) and len(v) <= 64 and names_anything(v)
    ]


class RedactionPass:
    """Accumulates counts over every text of one event; ``ctx.state`` is the working placeholder state."""

    def __init__(
        self,
        analyzer: TextAnalyzer,
        operators: OperatorTable,
        ctx: OperatorContext,
        threshold: float,
        timeout_s: float | None = None,
    ) -> None:
        self.deadline = time.monotonic() + timeout_s if timeout_s is not None else None
        self.analyzer = analyzer
        self.operators = operators
        self.ctx = ctx
        self.threshold = threshold
        self.redacted: Counter[str] = Counter()
        self.residual = 0
        self.cached_texts = 0
        self.analysed_texts = 0

    @property
    def total_redacted(self) -> int:
        return sum(self.redacted.values())

    # -------------------------------------------------------------------- plain text

    def text(self, text: str, context: list[str] | None = None) -> str:
        if not text:
            return text
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise RedactionTimeout("redaction took longer than its step timeout")
        findings, cached = self.analyzer.analyze(text, context)
        if cached:
            self.cached_texts += 1
        else:
            self.analysed_texts += 1
        if not findings:
            return text
        out = apply_operators(text, findings, self.operators, self.ctx, self.threshold)
        self.redacted.update(out.redacted)
        self.residual += out.residual
        return out.text

    # -------------------------------------------------------------------- JSON

    def payload(self, text: str, context: list[str] | None = None) -> str:
        """A string that may hold JSON: walked value by value when it parses, else plain text."""
        stripped = text.lstrip()
        if stripped[:1] in ("{", "["):
            parsed = loads_or_none(text)
            if isinstance(parsed, dict | list):
                before = self.total_redacted
                walked = self.value(parsed, context)
                if self.total_redacted == before:
                    return text
                compact = '": ' not in text and '", ' not in text
                return json.dumps(walked, ensure_ascii=False, separators=(",", ":") if compact else None)
        return self.text(text, context)

    def value(self, obj: Any, context: list[str] | None = None) -> Any:
        """Walk a parsed JSON value; each string is analysed with the key it sits under as context."""
        if isinstance(obj, str):
            return self.payload(obj, context) if obj[:1] in ("{", "[") else self.text(obj, context)
        if isinstance(obj, dict):
            named = sibling_names(obj)
            return {
                (self.text(k) if isinstance(k, str) else k): self.value(
                    v, ([k, *named] if named and k in VALUE_KEYS else [k]) if isinstance(k, str) else context
                )
                for k, v in obj.items()
            }
        if isinstance(obj, list):
            if len(obj) == 2 and isinstance(obj[0], str) and isinstance(obj[1], str):
                named = pair_value_context(obj[0], obj[1])  # ["X-Api-Key", "3f9a…"]: a header pair
                if named is not None:
                    return [self.value(obj[0], context), self.value(obj[1], named)]
            return [self.value(v, context) for v in obj]
        if (
            isinstance(obj, int)
            and not isinstance(obj, bool)
            and (abs(obj) >= 10 ** (MIN_NUMBER_DIGITS - 1) or _names_a_secret(context))
        ):
            as_text = str(obj)
            redacted = self.text(as_text, context)
            return obj if redacted == as_text else redacted
        return obj

    # -------------------------------------------------------------------- content parts

    def parts(self, parts: list[Any]) -> list[Any]:
        """OpenAI/Anthropic content parts: text blocks, tool_use input, tool_result content, others."""
        return [self._part(p) for p in parts]

    def _part(self, part: Any) -> Any:
        if not isinstance(part, dict):
            return self.value(part)
        out: dict[str, Any] = {}
        for k, v in part.items():
            if k in PART_STRUCTURAL_KEYS or (isinstance(v, str) and v.startswith("data:")):
                out[k] = v
            elif k == "content" and isinstance(v, list):
                out[k] = self.parts(v)
            elif isinstance(v, str):
                out[k] = self.payload(v, None if k == "text" else [k])
            elif isinstance(v, dict) and k not in ("input", "arguments"):
                out[k] = self._part(v)
            else:
                out[k] = self.value(v, [k])
        return out


class CollectPass(RedactionPass):
    """Walks an event as ``RedactionPass`` does but only records each text with its context (nothing is
    analysed, every text is left as it is): what ``TextAnalyzer.prefetch`` is to read in one batch."""

    def __init__(self) -> None:
        self.redacted = Counter()
        self.residual = 0
        self.cached_texts = 0
        self.analysed_texts = 0
        self.items: list[tuple[str, list[str] | None]] = []

    def text(self, text: str, context: list[str] | None = None) -> str:
        if text:
            self.items.append((text, context))
        return text


class WithholdPass(RedactionPass):
    """Fail closed: every text of the event is replaced by ``marker`` (used when redaction failed)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.redacted = Counter()
        self.residual = 0
        self.cached_texts = 0
        self.analysed_texts = 0
        self.withheld = 0

    @property
    def total_redacted(self) -> int:
        return self.withheld

    def text(self, text: str, context: list[str] | None = None) -> str:
        if not text:
            return text
        self.withheld += 1
        return self.marker

    def payload(self, text: str, context: list[str] | None = None) -> str:
        return self.text(text, context)

    def value(self, obj: Any, context: list[str] | None = None) -> Any:
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {k: self.value(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self.value(v) for v in obj]
        if isinstance(obj, int) and not isinstance(obj, bool) and abs(obj) >= 10 ** (MIN_NUMBER_DIGITS - 1):
            return self.text(str(obj))
        return obj

    def parts(self, parts: list[Any]) -> list[Any]:
        return [self.value(p) if not isinstance(p, dict) else self._part(p) for p in parts]

    def _part(self, part: Any) -> Any:
        if not isinstance(part, dict):
            return self.value(part)
        return {k: v if k in PART_STRUCTURAL_KEYS and k != "data" else self.value(v) for k, v in part.items()}
