"""How the serving model reads a text (``POST /v1/embeddings``, ``POST /tokenize``): its own
representation of a text, and its tokenizer's count of a chat or a prompt (vLLM's ``/tokenize``).

An embedding is the mean of the model's last hidden state over the text's tokens, scaled to unit length;
``dimensions`` keeps its first values and scales them to unit length again. The forward pass runs on the
generate thread between batches (``GenerateEngine.between_batches``), so it never races a weight swap
and its vector comes from the default policy version of that moment. Inputs are
embedded one at a time (no padding to mix into the mean); one longer than the model's context is a 400.
"""

from __future__ import annotations

import base64
from typing import Any

import torch

from trainers.exceptions import RequestError
from trainers.serving.engine import GenerateEngine
from trainers.serving.protocol import EmbeddingRequest, TokenizeRequest
from trainers.tiny_model import render_chat


def _vector(model: torch.nn.Module, ids: list[int], dimensions: int | None) -> torch.Tensor:
    with torch.inference_mode():
        out = model(
            input_ids=torch.tensor([ids], device=next(model.parameters()).device), output_hidden_states=True
        )
    vec = out.hidden_states[-1][0].float().mean(dim=0).cpu()
    if dimensions is not None:
        vec = vec[:dimensions]
    return vec / vec.norm().clamp_min(1e-12)


def _encoded(vec: torch.Tensor, encoding: str) -> Any:
    if encoding == "base64":  # little-endian float32, as OpenAI sends it
        return base64.b64encode(vec.numpy().astype("<f4").tobytes()).decode()
    return vec.tolist()


async def embed(engine: GenerateEngine, req: EmbeddingRequest, max_positions: int) -> dict[str, Any]:
    """The OpenAI embeddings answer to ``req``."""
    try:
        items = req.items()
    except ValueError as err:
        raise RequestError(str(err)) from None
    token_lists: list[list[int]] = []
    for i, item in enumerate(items):
        ids = engine.tokenizer.encode(item, add_special_tokens=False) if isinstance(item, str) else item
        if not ids:
            raise RequestError(f"input[{i}] is empty")
        if len(ids) > max_positions:
            raise RequestError(f"input[{i}] has {len(ids)} tokens; this model reads at most {max_positions}")
        vocab = engine.tokenizer.vocab_size + len(engine.tokenizer.get_added_vocab())
        if any(not 0 <= t < vocab for t in ids):
            raise RequestError(f"input[{i}] holds a token id outside the vocabulary (0..{vocab - 1})")
        token_lists.append(ids)
    width = engine.model.config.hidden_size
    if req.dimensions is not None and req.dimensions > width:
        raise RequestError(f"dimensions: at most {width} for this model")

    def run() -> list[torch.Tensor]:
        engine.use_default()  # the last batch may have left the parameters on a candidate
        return [_vector(engine.model, ids, req.dimensions) for ids in token_lists]

    vectors, _ = await engine.between_batches(run)
    tokens = sum(map(len, token_lists))
    data = [
        {"object": "embedding", "index": i, "embedding": _encoded(v, req.encoding_format)}
        for i, v in enumerate(vectors)
    ]
    return {
        "object": "list",
        "data": data,
        "model": req.model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def tokenize(engine: GenerateEngine, req: TokenizeRequest, max_positions: int) -> dict[str, Any]:
    """vLLM's ``/tokenize`` answer: the token ids of the prompt the model would read (a chat rendered by
    its template, with the generation prompt unless ``add_generation_prompt`` is false)."""
    if req.messages is not None:
        text = render_chat(req.messages, add_generation_prompt=req.add_generation_prompt)
    else:
        text = req.prompt or ""
    ids = engine.tokenizer(text, add_special_tokens=req.add_special_tokens)["input_ids"]
    return {"count": len(ids), "max_model_len": max_positions, "tokens": ids}
