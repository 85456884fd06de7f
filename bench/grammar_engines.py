"""Per-token overhead of JSON-schema grammar engines inside a CPU decode loop: llguidance, xgrammar,
outlines-core.

For each engine and tokenizer (the tiny char-level model's, 101 ids; SmolLM2-135M's byte-level BPE, 49,152
ids, when its files are cached) the bench compiles one tool schema with a nested object, an array of
objects and an ``anyOf``, then walks a valid arguments document token by token as a decode loop would:
fill the allowed-token bitmask, apply it to a logits row (one shared unpacking, so only the engine's work
differs), consume the token. It reports per engine and tokenizer the vocabulary build and schema compile
times (wall clock; compile = first matcher of the schema) and the mean microseconds per token of the
engine's own work (mask + consume) and of the shared apply, measured in this thread's CPU time (a busy
machine does not inflate it; best of 5 walks). An engine that is not installed
or fails is reported with its error instead of figures.

    python -m bench.grammar_engines            # one JSON line; docs/benchmarks/grammar_engines.json
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import torch

from trainers.serving.grammar import apply_bitmask, token_bytes

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "when": {
            "type": "object",
            "properties": {
                "date": {"type": "string", "pattern": r"\d{4}-\d{2}-\d{2}"},
                "flexible": {"type": "boolean"},
            },
            "required": ["date"],
        },
        "guests": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                "required": ["name"],
            },
        },
        "budget": {"anyOf": [{"type": "number"}, {"type": "string", "enum": ["low", "high"]}]},
    },
    "required": ["city", "when", "guests", "budget"],
}
DOCUMENT = {
    "city": "Lisbon",
    "when": {"date": "2026-12-05", "flexible": True},
    "guests": [{"name": "Ana", "age": 34}, {"name": "Rui"}, {"name": "Marta Sousa", "age": 7}],
    "budget": "high",
}
TEXT = json.dumps(DOCUMENT, separators=(",", ":"))
REPEATS = 5

Step = Callable[[torch.Tensor, int], None]  # (bitmask row buffer, token id) -> mask filled, token consumed


class _ByteTable:
    """What llguidance's ``TokenizerWrapper`` reads from a tokenizer it cannot load itself (special tokens
    carry its 0xFF marker)."""

    def __init__(self, tok: Any, vocab: list[bytes | None]) -> None:
        self.eos_token_id, self.bos_token_id = tok.eos_token_id, tok.bos_token_id
        self.special_token_ids = sorted(set(tok.all_special_ids))
        self.tokens = [b if b is not None else b"\xff" + f"<{i}>".encode() for i, b in enumerate(vocab)]
        self._tok = tok

    def __call__(self, text: str) -> list[int]:
        return self._tok(text, add_special_tokens=False)["input_ids"]


def _llguidance(tok: Any, vocab: list[bytes | None]) -> tuple[Callable[[], Step], float]:
    import llguidance
    import llguidance.hf

    t0 = time.perf_counter()
    if tok.is_fast:
        ll_tok = llguidance.hf.from_tokenizer(tok)
    else:
        ll_tok = llguidance.LLTokenizer(
            llguidance.TokenizerWrapper(_ByteTable(tok, vocab)), n_vocab=len(vocab)
        )
    build = time.perf_counter() - t0
    grammar = llguidance.LLMatcher.grammar_from_json_schema(SCHEMA)

    def new() -> Step:
        m = llguidance.LLMatcher(ll_tok, grammar)
        assert not m.is_error(), m.get_error()

        def step(mask: torch.Tensor, token: int) -> None:
            m.unsafe_compute_mask_ptr(mask.data_ptr(), mask.numel() * 4)
            assert m.consume_token(token), m.get_error()

        return step

    return new, build


def _xgrammar(tok: Any, vocab: list[bytes | None]) -> tuple[Callable[[], Step], float]:
    import xgrammar as xg

    t0 = time.perf_counter()
    if tok.is_fast:
        info = xg.TokenizerInfo.from_huggingface(tok, vocab_size=len(tok))
    else:
        info = xg.TokenizerInfo([b or b"" for b in vocab], stop_token_ids=[tok.eos_token_id])
    compiler = xg.GrammarCompiler(info)
    build = time.perf_counter() - t0
    compiled = compiler.compile_json_schema(SCHEMA, any_whitespace=False, separators=(",", ":"))

    def new() -> Step:
        m = xg.GrammarMatcher(compiled)

        def step(mask: torch.Tensor, token: int) -> None:
            m.fill_next_token_bitmask(mask[None], 0)
            assert m.accept_token(token)

        return step

    return new, build


def _outlines_core(tok: Any, vocab: list[bytes | None]) -> tuple[Callable[[], Step], float]:
    from outlines_core import Guide, Index, Vocabulary
    from outlines_core.json_schema import build_regex_from_schema

    t0 = time.perf_counter()
    by_text: dict[bytes, list[int]] = {}
    for i, b in enumerate(vocab):
        if b and i != tok.eos_token_id:
            by_text.setdefault(b, []).append(i)
    voc = Vocabulary(tok.eos_token_id, by_text)
    build = time.perf_counter() - t0
    index = Index(build_regex_from_schema(json.dumps(SCHEMA), r"[ ]?"), voc)

    def new() -> Step:
        g = Guide(index)

        def step(mask: torch.Tensor, token: int) -> None:
            g.write_mask_into(mask.data_ptr(), mask.numel(), 4)
            g.advance(token)

        return step

    return new, build


ENGINES = {"llguidance": _llguidance, "xgrammar": _xgrammar, "outlines-core": _outlines_core}


def _tokenizers() -> dict[str, Any]:
    from trainers.tiny_model import build_tokenizer

    out: dict[str, Any] = {"sluice-tiny": build_tokenizer()}
    try:
        from transformers import AutoTokenizer

        from trainers.smollm2 import DEFAULT_CACHE_DIR, SMOLLM2_NAME

        path = DEFAULT_CACHE_DIR / SMOLLM2_NAME
        if (path / "tokenizer.json").is_file():
            out["smollm2-135m"] = AutoTokenizer.from_pretrained(path)
    except Exception:  # noqa: BLE001 - the bench runs with what is there
        pass
    return out


def measure(name: str, tok: Any) -> dict[str, Any]:
    vocab = token_bytes(tok)
    ids = tok(TEXT, add_special_tokens=False)["input_ids"]
    try:
        t0 = time.perf_counter()
        new, build_s = ENGINES[name](tok, vocab)
        first = new()
        compile_s = time.perf_counter() - t0 - build_s
    except Exception as err:  # noqa: BLE001 - reported, not raised
        return {"error": f"{type(err).__name__}: {err}"[:200]}
    size = len(vocab)
    mask = torch.zeros((size + 31) // 32, dtype=torch.int32)
    logits = torch.randn(size)
    engine, applied = [], []
    for r in range(REPEATS):
        step = first if r == 0 else new()
        spent = [0.0, 0.0]
        try:
            for token in ids:
                t0 = time.thread_time()
                step(mask, token)
                t1 = time.thread_time()
                apply_bitmask(logits.clone(), mask)
                spent[0] += t1 - t0
                spent[1] += time.thread_time() - t1
        except Exception as err:  # noqa: BLE001
            return {"error": f"{type(err).__name__}: {err}"[:200]}
        engine.append(spent[0] / len(ids))
        applied.append(spent[1] / len(ids))
    return {
        "vocab_build_s": round(build_s, 4),
        "compile_s": round(compile_s, 4),
        "us_per_token": round(1e6 * (min(engine) + min(applied)), 1),
        "engine_us_per_token": round(1e6 * min(engine), 1),
        "apply_us_per_token": round(1e6 * min(applied), 1),
        "tokens": len(ids),
    }


def main() -> None:
    torch.set_num_threads(1)
    results: dict[str, Any] = {"schema": "nested object + array of objects + anyOf", "engines": {}}
    for tok_name, tok in _tokenizers().items():
        for name in ENGINES:
            results["engines"].setdefault(name, {})[tok_name] = measure(name, tok)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
