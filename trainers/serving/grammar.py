"""Schema-constrained decoding of forced tool calls by xgrammar: the model writes the arguments JSON, token
by token, and may only pick tokens that keep the text a prefix of an object the function's schema accepts —
full JSON Schema (nested objects, arrays, ``anyOf``/``oneOf``, ``$ref``, enums, patterns, lengths, numeric
bounds), as xgrammar's JSON Schema converter reads it.

Why xgrammar (``python -m bench.grammar_engines``, docs/benchmarks/grammar_engines.json): of the engines
that install from PyPI and plug into a transformers decode loop on CPU (llguidance, xgrammar, outlines-core)
it had by far the lowest per-token cost on a real vocabulary (SmolLM2's 49,152 ids: tens of microseconds
for mask + consume, against hundreds for the other two), because it precomputes which tokens are
context-independent per grammar state. Its compile (tens of milliseconds per schema on that vocabulary) is
paid once per schema: compiled grammars are cached per tokenizer, keyed by the schema's JSON.

How a step is constrained (``SchemaConstraint``, the ``LogitsConstraint`` of ``trainers.generation``): the
matcher fills a bitmask of allowed ids and forbidden logits go to -inf, so the choice among valid
continuations stays the model's. Output is JSON with ``json.dumps``'s separators (``", "``, ``": "``),
no other whitespace freedom, no properties beyond the declared ones. Departures from the engine's defaults, kept from the
serving path before it: where a string may close, the model's wish to end the value with a special token
(a chat model's end-of-turn marker, as it ends unconstrained forced calls) counts for the closing quote:
the special tokens' probability mass is folded into the ``"`` token and they stay masked, so the token
sampled, fed back to the model and returned is the quote itself (the ids of a call always decode to its
arguments text, which is what lets a re-sent history extend them, ``token_history``); tokens holding a raw
control character are masked too (the engine lets a raw tab into a string, which is no JSON); the mask is
applied by plain tensor ops (``apply_bitmask``), faster on CPU than the engine's own.

    python -m pytest tests/trainers/serving/test_schema_decoding.py   (the engine behind forced tool calls)
"""

from __future__ import annotations

import codecs
import json
import threading
from typing import TYPE_CHECKING, Any

import torch
from transformers import PreTrainedTokenizerBase

from trainers.exceptions import RequestError

if TYPE_CHECKING:
    import xgrammar as xg

# Keywords a plain-string parameter may carry without asking for a grammar (the free-text path).
_PLAIN = frozenset({"type", "description", "title", "default", "examples"})
_CACHE_SCHEMAS = 256  # compiled grammars kept per tokenizer
SEPARATORS = (", ", ": ")  # json.dumps's: the text models most often saw JSON written in


def needs_grammar(parameters: dict[str, Any] | None) -> bool:
    """True when the schema asks for more than free-text strings (a constraint, a non-string type, a
    nested object, an array, a union); a schema of plain strings keeps the free-text path."""
    props = (parameters or {}).get("properties") or {}
    return any(
        not isinstance(p, dict) or p.get("type", "string") != "string" or bool(set(p) - _PLAIN)
        for p in props.values()
    )


def arguments_grammar(parameters: dict[str, Any]) -> str:
    """The canonical JSON of a function's ``parameters`` (an object schema) to decode under; a 400 for
    what is not an object schema. Whether the engine can compile it is checked when a tokenizer is
    known (``SchemaConstraint``, ``compiled``)."""
    if not isinstance(parameters, dict) or parameters.get("type", "object") != "object":
        raise RequestError("constrained decoding needs parameters of type object")
    props = parameters.get("properties") or {}
    unknown = set(parameters.get("required") or []) - set(props)
    if unknown:
        raise RequestError(f"required names parameters that are not declared: {sorted(unknown)}")
    return json.dumps({"type": "object", **parameters}, sort_keys=False)


# ----------------------------------------------------------------------------- tokenizers


def token_bytes(tokenizer: PreTrainedTokenizerBase) -> list[bytes | None]:
    """The UTF-8 bytes each id writes (None: a special token, or no whole characters) by decoding ids one
    at a time; right for character-level and word-level tokenizers, not for byte-level BPE pieces."""
    special = set(tokenizer.all_special_ids)
    size = max(len(tokenizer), getattr(tokenizer, "vocab_size", 0))
    out: list[bytes | None] = []
    for i in range(size):
        text = None if i in special else tokenizer.decode([i])
        out.append(text.encode() if text and "\ufffd" not in text else None)
    return out


def tokenizer_info(tokenizer: PreTrainedTokenizerBase) -> xg.TokenizerInfo:
    """xgrammar's view of ``tokenizer``: its own loader for a fast tokenizer, a byte table otherwise
    (an empty entry is a special token, never allowed inside the JSON). xgrammar is imported here, on the
    first constrained call, not when the server starts (its import costs seconds of CPU)."""
    import xgrammar as xg

    if getattr(tokenizer, "is_fast", False):
        return xg.TokenizerInfo.from_huggingface(tokenizer, vocab_size=len(tokenizer))
    vocab = [b or b"" for b in token_bytes(tokenizer)]
    return xg.TokenizerInfo(
        vocab, xg.VocabType.RAW, vocab_size=len(vocab), stop_token_ids=[tokenizer.eos_token_id]
    )


class _Tables:
    """Per tokenizer: the compiler (with its schema cache), token bytes, special ids, the id of a lone ``"``."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase) -> None:
        import xgrammar as xg

        self.info = tokenizer_info(tokenizer)
        self.compiler = xg.GrammarCompiler(self.info, cache_enabled=True)
        self.vocab_size = self.info.vocab_size
        self.decoded = self.info.decoded_vocab
        # ids whose text holds a raw control character: never valid in this JSON (xgrammar 0.2.8's string
        # rule lets a raw tab through, which JSON parsers refuse; no whitespace freedom needs one elsewhere)
        control = torch.zeros(self.vocab_size, dtype=torch.bool)
        for i, piece in enumerate(self.decoded[: self.vocab_size]):
            control[i] = any(b < 0x20 for b in piece)
        self.control = control
        self.special = sorted(set(tokenizer.all_special_ids))
        quote = tokenizer('"', add_special_tokens=False)["input_ids"]
        self.quote = quote[0] if len(quote) == 1 else None
        self._compiled: dict[str, xg.CompiledGrammar] = {}
        self._lock = threading.Lock()

    def compiled(self, schema: str) -> xg.CompiledGrammar:
        with self._lock:
            got = self._compiled.get(schema)
        if got is not None:
            return got
        try:
            got = self.compiler.compile_json_schema(schema, any_whitespace=False, separators=SEPARATORS)
        except (RuntimeError, ValueError) as err:
            reason = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
            raise RequestError(f"the parameters schema cannot be decoded: {reason}") from None
        with self._lock:
            if len(self._compiled) >= _CACHE_SCHEMAS:
                self._compiled.pop(next(iter(self._compiled)))
            self._compiled[schema] = got
        return got


_TABLES: dict[int, tuple[PreTrainedTokenizerBase, _Tables]] = {}
_TABLES_LOCK = threading.Lock()


def _tables(tokenizer: PreTrainedTokenizerBase) -> _Tables:
    with _TABLES_LOCK:
        got = _TABLES.get(id(tokenizer))
        if got is None or got[0] is not tokenizer:
            got = (tokenizer, _Tables(tokenizer))
            _TABLES[id(tokenizer)] = got
        return got[1]


def compiled(schema: str, tokenizer: PreTrainedTokenizerBase) -> xg.CompiledGrammar:
    """The compiled grammar of ``schema`` (``arguments_grammar``'s text) for ``tokenizer``; a 400 when the
    engine cannot compile it."""
    return _tables(tokenizer).compiled(schema)


_BITS = torch.arange(32, dtype=torch.int32)


def apply_bitmask(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``logits`` [V] with every id whose bit in ``mask`` [ceil(V/32)] int32 is 0 set to -inf (in place)."""
    allowed = ((mask[:, None] >> _BITS) & 1).flatten().bool()  # [32 * words]
    width = min(allowed.numel(), logits.shape[-1])
    keep = torch.zeros(logits.shape[-1], dtype=torch.bool)
    keep[:width] = allowed[:width]
    return logits.masked_fill_(~keep.to(logits.device), float("-inf"))


# ----------------------------------------------------------------------------- the constraint


class SchemaConstraint:
    """Per-row logits constraint of one forced call (the ``LogitsConstraint`` of ``trainers.generation``).

    ``constrain(logits [V]) -> logits [V]`` masks what cannot continue a valid object (where a string may
    close, the special tokens' mass goes to ``"``); ``advance(id)`` consumes the sampled token and sets
    ``last_piece`` (the text it added), ``text`` and ``done`` (the object is complete, or nothing could
    continue it: then ``stuck`` too).
    """

    def __init__(self, schema: str, tokenizer: PreTrainedTokenizerBase) -> None:
        self.tables = _tables(tokenizer)
        import xgrammar as xg

        self.matcher = xg.GrammarMatcher(self.tables.compiled(schema), terminate_without_stop_token=True)
        self.mask = torch.zeros((1, (self.tables.vocab_size + 31) // 32), dtype=torch.int32)
        self.text = ""
        self.last_piece = ""
        self.done = False
        self.stuck = False
        self._in_string = False
        self._escaped = False
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def _bit(self, token_id: int) -> bool:
        word, bit = divmod(token_id, 32)
        return word < self.mask.shape[1] and bool((int(self.mask[0, word]) >> bit) & 1)

    def constrain(self, logits: torch.Tensor) -> torch.Tensor:
        self.matcher.fill_next_token_bitmask(self.mask, 0)
        out = apply_bitmask(logits.clone(), self.mask[0])
        width = min(out.shape[-1], self.tables.control.numel())
        out[:width].masked_fill_(self.tables.control[:width].to(out.device), float("-inf"))
        quote = self.tables.quote
        if self._in_string and quote is not None and self._bit(quote) and self.tables.special:
            # an end-of-turn marker would close this string: its mass goes to the quote, which is sampled in
            # its place (specials stay masked; ids and text stay one and the same)
            idx = torch.tensor([quote, *self.tables.special], dtype=torch.long, device=logits.device)
            out[quote] = torch.logsumexp(logits[idx].float(), dim=0).to(out.dtype)
        if bool(torch.isneginf(out).all()):  # nothing continues a valid object: end the row
            self.stuck = True
            first = self.tables.special[:1] or [int(torch.argmax(logits))]
            out[first[0]] = logits[first[0]]
        return out

    def advance(self, token_id: int) -> None:
        if self.stuck:
            self.last_piece, self.done = "", True
            return
        if not self.matcher.accept_token(token_id):
            self.last_piece, self.done, self.stuck = "", True, True
            return
        self.last_piece = self._utf8.decode(self.tables.decoded[token_id])
        self._lex(self.last_piece)
        self.text += self.last_piece
        self.done = self.matcher.is_terminated()

    def _lex(self, piece: str) -> None:
        """Track whether the text so far ends inside a JSON string."""
        for ch in piece:
            if self._escaped:
                self._escaped = False
            elif self._in_string and ch == "\\":
                self._escaped = True
            elif ch == '"':
                self._in_string = not self._in_string

    def arguments(self) -> dict[str, Any]:
        """The decoded arguments (only once ``done`` and not ``stuck``)."""
        return json.loads(self.text)
