"""Schema-constrained decoding of forced tool calls: the model writes the arguments JSON, token by token,
and may only pick tokens that keep the text a viable prefix of an object the function's schema accepts.

The subset honoured (what OpenAI's strict function calling and vLLM's guided decoding give for flat
argument objects): ``properties`` of ``type`` string, integer, number or boolean; ``enum`` and
``const`` (any JSON values); string ``pattern`` (a regular expression the whole value must match, as
outlines and vLLM read it: a leading ``^`` and trailing ``$`` are implied) and ``maxLength``;
``required`` (always written; the others at the model's choice). Keys come in schema order with ``json.dumps`` separators, so the
structure is fixed text the model is steered through; only values are the model's to choose. A plain
string (no enum, pattern or maxLength) is free text ended by the model's closing quote or by a special
token (an end-of-turn marker closes it), as unconstrained forced calls end today. String values never
contain ``"``, ``\\`` or control characters (no escapes are generated).

How a step is constrained (``SchemaConstraint.constrain``): the candidates are the row's top-k tokens by
logit, each checked by advancing a character-level state machine over the token's text (``regex``'s
``partial=True`` full match tells whether a pattern value can still match). The allowed tokens are the
viable ones among them; when none of the top-k is viable, the tokens whose first character can advance
the state are sorted by logit and tried in order. Every other logit is set to -inf, so the choice among
valid values is still the model's (greedy picks the most probable valid token). The decoded text of
every token is computed once per tokenizer (``TokenTable``). Departure from vLLM/lm-format-enforcer:
no whitespace or key-order freedom, and sampling at temperature > 0 draws among the top-k viable tokens.
Not built on lm-format-enforcer (0.11.3 on PyPI, full JSON Schema): it was not tried with transformers 5.x
here, and this subset needs no new dependency beyond ``regex`` (which transformers already requires).

    python -m pytest tests/trainers/serving/test_schema_decoding.py
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

import regex
import torch
from transformers import PreTrainedTokenizerBase

from trainers.exceptions import RequestError

TOP_K = 64  # candidates checked first; the fallback scan covers the rest of the vocabulary
_INTEGER = regex.compile(r"-?(?:0|[1-9][0-9]{0,17})")
_NUMBER = regex.compile(r"-?(?:0|[1-9][0-9]{0,17})(?:\.[0-9]{1,12})?(?:[eE][+-]?[0-9]{1,3})?")
_CONSTRAINTS = ("enum", "const", "pattern", "maxLength")
_UNSUPPORTED = ("anyOf", "oneOf", "allOf", "not", "$ref", "items", "properties")


# ----------------------------------------------------------------------------- values


class ValueSpec:
    """One property's value, as JSON text: can ``text`` still grow into a valid value, is it one now."""

    def viable(self, text: str) -> bool:
        raise NotImplementedError

    def complete(self, text: str) -> bool:
        raise NotImplementedError

    def free_string(self, text: str) -> bool:
        """True while an open free-text string (a special token may close it)."""
        return False


@dataclass(frozen=True)
class EnumValue(ValueSpec):
    choices: tuple[str, ...]  # the JSON text of each allowed value

    def viable(self, text: str) -> bool:
        return any(c.startswith(text) for c in self.choices)

    def complete(self, text: str) -> bool:
        return text in self.choices


@dataclass(frozen=True)
class RegexValue(ValueSpec):
    """A number's JSON text against a regular expression."""

    rx: Any

    def viable(self, text: str) -> bool:
        return self.rx.fullmatch(text, partial=True) is not None

    def complete(self, text: str) -> bool:
        return self.rx.fullmatch(text) is not None


@dataclass(frozen=True)
class StringValue(ValueSpec):
    pattern: Any = None  # compiled regex the whole content must match
    max_length: int | None = None

    def _content(self, text: str) -> tuple[str, bool] | None:
        """(content, closed) of a string's JSON text, None when it is no string prefix."""
        if not text.startswith('"'):
            return ("", False) if text == "" else None
        body = text[1:]
        closed = body.endswith('"')
        content = body[:-1] if closed else body
        if any(ch in '"\\' or ord(ch) < 0x20 for ch in content):
            return None
        return content, closed

    def viable(self, text: str) -> bool:
        got = self._content(text)
        if got is None:
            return False
        content, closed = got
        if closed:
            return self.complete(text)
        if self.max_length is not None and len(content) > self.max_length:
            return False
        return self.pattern is None or self.pattern.fullmatch(content, partial=True) is not None

    def complete(self, text: str) -> bool:
        got = self._content(text)
        if got is None or not got[1] or len(text) < 2:
            return False
        content = got[0]
        if self.max_length is not None and len(content) > self.max_length:
            return False
        return self.pattern is None or self.pattern.fullmatch(content) is not None

    def free_string(self, text: str) -> bool:
        got = self._content(text)
        return self.pattern is None and got is not None and text.startswith('"') and not got[1]


def _pattern(prop: str, raw: Any) -> Any:
    if not isinstance(raw, str):
        raise RequestError(f"parameter {prop!r}: pattern must be a string")
    body = raw[1:] if raw.startswith("^") else raw
    if body.endswith("$") and not body.endswith("\\$"):
        body = body[:-1]
    try:
        return regex.compile(body)
    except regex.error as err:
        raise RequestError(f"parameter {prop!r}: pattern {raw!r} does not compile: {err}") from None


def value_spec(prop: str, schema: dict[str, Any]) -> ValueSpec:
    """The value spec of one property's schema; a 400 for what the subset does not cover."""
    unsupported = sorted(k for k in _UNSUPPORTED if k in schema)
    if unsupported:
        raise RequestError(
            f"parameter {prop!r}: {', '.join(unsupported)} is not supported by constrained decoding"
        )
    if "enum" in schema or "const" in schema:
        values = schema["enum"] if "enum" in schema else [schema["const"]]
        if not isinstance(values, list) or not values:
            raise RequestError(f"parameter {prop!r}: enum must be a non-empty list")
        texts = tuple(json.dumps(v) for v in values)
        if any(isinstance(v, str) and any(c in v for c in '"\\') for v in values):
            raise RequestError(f"parameter {prop!r}: enum strings with quotes or backslashes")
        return EnumValue(texts)
    kind = schema.get("type", "string")
    if kind == "string":
        max_length = schema.get("maxLength")
        if max_length is not None and (not isinstance(max_length, int) or max_length < 0):
            raise RequestError(f"parameter {prop!r}: maxLength must be a non-negative integer")
        pattern = _pattern(prop, schema["pattern"]) if "pattern" in schema else None
        return StringValue(pattern, max_length)
    if kind == "integer":
        return RegexValue(_INTEGER)
    if kind == "number":
        return RegexValue(_NUMBER)
    if kind == "boolean":
        return EnumValue(("true", "false"))
    raise RequestError(
        f"parameter {prop!r}: type {kind!r} is not supported by constrained decoding "
        "(string, integer, number, boolean, enum)"
    )


# ----------------------------------------------------------------------------- the object


@dataclass(frozen=True)
class Field:
    name: str
    spec: ValueSpec
    required: bool


@dataclass(frozen=True)
class ArgumentsGrammar:
    """The arguments object of one function: its fields in schema order."""

    fields: tuple[Field, ...]

    def connectors(self, after: int) -> tuple[tuple[str, int], ...]:
        """Literal texts that may follow field ``after`` (-1: the start), each with the field it opens
        (``len(fields)``: the object closes). Prefix-free, since every key is quoted."""
        first = after < 0
        out: list[tuple[str, int]] = []
        for j in range(after + 1, len(self.fields)):
            out.append((("{" if first else ", ") + json.dumps(self.fields[j].name) + ": ", j))
            if self.fields[j].required:
                return tuple(out)
        out.append(("{}" if first else "}", len(self.fields)))
        return tuple(out)


def needs_grammar(parameters: dict[str, Any] | None) -> bool:
    """True when some property carries a constraint the server honours (enum, pattern, maxLength, or a
    non-string type); a schema of plain strings keeps the free-text path."""
    props = (parameters or {}).get("properties") or {}
    return any(
        isinstance(p, dict) and (any(k in p for k in _CONSTRAINTS) or p.get("type", "string") != "string")
        for p in props.values()
    )


def arguments_grammar(parameters: dict[str, Any]) -> ArgumentsGrammar:
    """The grammar of a function's ``parameters`` (an object schema); a 400 for what it cannot honour."""
    if parameters.get("type", "object") != "object":
        raise RequestError("constrained decoding needs parameters of type object")
    props = parameters.get("properties") or {}
    required = set(parameters.get("required") or [])
    unknown = required - set(props)
    if unknown:
        raise RequestError(f"required names parameters that are not declared: {sorted(unknown)}")
    fields = []
    for name, schema in props.items():
        if not isinstance(schema, dict):
            raise RequestError(f"parameter {name!r}: its schema must be an object")
        fields.append(Field(name, value_spec(name, schema), name in required))
    return ArgumentsGrammar(tuple(fields))


@dataclass(frozen=True)
class State:
    """Where the text stands: in a connector (``typed`` chars of the literals after field ``field``),
    in field ``field``'s value (``typed`` is its JSON text so far), or done."""

    phase: str  # "connector" | "value" | "done"
    field: int
    typed: str = ""


def advance(g: ArgumentsGrammar, s: State, text: str) -> State | None:
    """The state after ``text``, or None when no valid object starts with what was written plus it."""
    for ch in text:
        if s.phase == "value":
            spec = g.fields[s.field].spec
            if spec.viable(s.typed + ch):
                s = State("value", s.field, s.typed + ch)
                continue
            if not spec.complete(s.typed):
                return None
            s = State("connector", s.field)
        if s.phase != "connector":
            return None  # done: nothing may follow
        typed = s.typed + ch
        alts = [(lit, nxt) for lit, nxt in g.connectors(s.field) if lit.startswith(typed)]
        if not alts:
            return None
        whole = next((nxt for lit, nxt in alts if lit == typed), None)
        if whole is None:
            s = State("connector", s.field, typed)
        elif whole == len(g.fields):
            s = State("done", whole)
        else:
            s = State("value", whole)
    return s


# ----------------------------------------------------------------------------- tokens


class TokenTable:
    """The decoded text of every token id (None: special, or not whole characters), and the ids by
    their first character; built once per tokenizer."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase) -> None:
        special = set(tokenizer.all_special_ids)
        size = max(len(tokenizer), getattr(tokenizer, "vocab_size", 0))
        self.texts: list[str | None] = []
        by_first: dict[str, list[int]] = {}
        for i in range(size):
            text = None if i in special else tokenizer.decode([i])
            if not text or "\ufffd" in text:
                text = None
            self.texts.append(text)
            if text:
                by_first.setdefault(text[0], []).append(i)
        self.special_ids = frozenset(special)
        self.special = torch.tensor(sorted(special), dtype=torch.long)
        self.by_first = {c: torch.tensor(ids, dtype=torch.long) for c, ids in by_first.items()}


_TABLES: dict[int, tuple[PreTrainedTokenizerBase, TokenTable]] = {}
_TABLES_LOCK = threading.Lock()


def token_table(tokenizer: PreTrainedTokenizerBase) -> TokenTable:
    with _TABLES_LOCK:
        got = _TABLES.get(id(tokenizer))
        if got is None or got[0] is not tokenizer:
            got = (tokenizer, TokenTable(tokenizer))
            _TABLES[id(tokenizer)] = got
        return got[1]


class SchemaConstraint:
    """Per-row logits constraint of one forced call (the ``LogitsConstraint`` of ``trainers.generation``).

    ``constrain(logits [V]) -> logits [V]`` masks what cannot continue a valid object; ``advance(id)``
    moves the state by the sampled token and sets ``last_piece`` (the text it added to the arguments: a
    special token closing a free string adds the closing quote) and ``done`` (the object is complete,
    or no token could continue it: then ``stuck`` too).
    """

    def __init__(
        self, grammar: ArgumentsGrammar, tokenizer: PreTrainedTokenizerBase, top_k: int = TOP_K
    ) -> None:
        self.grammar, self.table, self.top_k = grammar, token_table(tokenizer), top_k
        self.state = State("connector", -1)
        self.text = ""
        self.last_piece = ""
        self.done = False
        self.stuck = False

    def _piece(self, token_id: int) -> str | None:
        """The text a token would add now (None: it cannot be written here)."""
        text = self.table.texts[token_id] if token_id < len(self.table.texts) else None
        if text is not None:
            return text
        return '"' if token_id in self.table.special_ids and self._in_free_string() else None

    def _in_free_string(self) -> bool:
        s = self.state
        return s.phase == "value" and self.grammar.fields[s.field].spec.free_string(s.typed)

    def _ok(self, token_id: int) -> bool:
        piece = self._piece(token_id)
        return piece is not None and advance(self.grammar, self.state, piece) is not None

    def allowed(self, logits: torch.Tensor) -> list[int]:
        """Up to ``top_k`` viable token ids, most probable first."""
        k = min(self.top_k, logits.shape[-1])
        ok = [t for t in torch.topk(logits, k).indices.tolist() if self._ok(t)]
        if ok:
            return ok
        firsts = [c for c in self.table.by_first if advance(self.grammar, self.state, c) is not None]
        parts = [self.table.by_first[c] for c in firsts]
        if self._in_free_string():
            parts.append(self.table.special)
        if not parts:
            return []
        cand = torch.cat(parts).to(logits.device)
        cand = cand[cand < logits.shape[-1]]
        order = cand[torch.argsort(logits[cand], descending=True)].tolist()
        out = []
        for t in order:
            if self._ok(t):
                out.append(t)
                if len(out) >= k:
                    break
        return out

    def constrain(self, logits: torch.Tensor) -> torch.Tensor:
        ok = self.allowed(logits)
        out = torch.full_like(logits, float("-inf"))
        if not ok:  # nothing continues a valid object: end the row (its arguments stay incomplete)
            self.stuck = True
            ok = self.table.special.tolist()[:1] or [int(torch.argmax(logits))]
        idx = torch.tensor(ok, dtype=torch.long, device=logits.device)
        out[idx] = logits[idx]
        return out

    def advance(self, token_id: int) -> None:
        piece = None if self.stuck else self._piece(token_id)
        nxt = None if piece is None else advance(self.grammar, self.state, piece)
        if nxt is None:
            self.last_piece, self.done, self.stuck = "", True, True
            return
        self.state, self.last_piece = nxt, piece or ""
        self.text += self.last_piece
        self.done = nxt.phase == "done"
