"""A small batched decode loop with a KV cache: per-row temperature, seed, stop tokens, streaming callback
and an optional logits constraint (a forced tool call's argument schema, ``trainers.serving.grammar``).

Used by the CPU rollout backend and by `sluice serve-model`. Departs from ``model.generate``: it returns the
sampling-time logprob of every token (the log-probability under the distribution the token was actually drawn
from, i.e. after temperature/top-p), which the GRPO loss uses as the behaviour policy; it calls back per
token so the server can stream for real; and rows that share a prompt (n > 1, a GRPO group) share one
prefill whose KV cache is repeated across them. Left padding with explicit position ids, so a row's logits do not
depend on what it is batched with.

    python -m pytest tests/trainers/test_generation.py
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import torch

# on_token(token_id, logprob) -> False stops this row (e.g. a stop string was hit).
TokenCallback = Callable[[int, float], bool]


class LogitsConstraint(Protocol):
    """Per-row state that restricts which tokens may come next (e.g. a tool call's argument schema).

    ``constrain`` gets the row's raw logits [V] before temperature/top-p and returns them with every
    forbidden token at -inf; ``advance`` is told the sampled token, before ``on_token``, and sets
    ``last_piece`` (the text that token added to the constrained output); once ``done`` is true the row
    stops.
    """

    done: bool
    last_piece: str

    def constrain(self, logits: torch.Tensor) -> torch.Tensor: ...

    def advance(self, token_id: int) -> None: ...


@dataclass
class GenRequest:
    prompt_ids: list[int]
    max_tokens: int
    temperature: float = 1.0  # 0 = greedy
    top_p: float = 1.0
    generator: torch.Generator | None = None
    stop_ids: frozenset[int] = frozenset()
    on_token: TokenCallback | None = None
    constraint: LogitsConstraint | None = None


@dataclass
class GenResult:
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    finish_reason: str = "length"  # "stop" (stop token or callback) | "length"


def _processed_logprobs(logits: torch.Tensor, temps: torch.Tensor, top_ps: torch.Tensor) -> torch.Tensor:
    """log p of the sampling distribution. logits [B, V] float32; temps, top_ps [B]."""
    t = torch.where(temps > 0, temps, torch.ones_like(temps))
    logp = torch.log_softmax(logits / t[:, None], dim=-1)  # [B, V]
    if bool((top_ps < 1).any()):
        sorted_lp, idx = torch.sort(logp, dim=-1, descending=True)
        cum = sorted_lp.exp().cumsum(-1)
        drop_sorted = (cum - sorted_lp.exp()) >= top_ps[:, None]  # keep the smallest prefix reaching top_p
        drop = torch.zeros_like(drop_sorted).scatter(-1, idx, drop_sorted)
        logp = torch.log_softmax(logp.masked_fill(drop, float("-inf")), dim=-1)
    return logp


def _sample(logp: torch.Tensor, temps: torch.Tensor, requests: list[GenRequest]) -> torch.Tensor:
    """Next token per row [B]: greedy where temperature is 0, else drawn with the row's generator.

    Seeded rows carry CPU generators (``torch.multinomial`` takes no CPU generator for a GPU tensor), so on a
    GPU a batch with one is drawn from on the CPU; unseeded batches are drawn on the device."""
    probs = logp.exp()
    gens = [r.generator for r in requests]
    if probs.device.type != "cpu" and any(g is not None and g.device.type == "cpu" for g in gens):
        return torch.where(temps > 0, _draw(probs.cpu(), gens).to(probs.device), logp.argmax(-1))
    return torch.where(temps > 0, _draw(probs, gens), logp.argmax(-1))


def _draw(probs: torch.Tensor, gens: list[torch.Generator | None]) -> torch.Tensor:
    """One token per row of ``probs`` [B, V], each row with its own generator (one call when they share)."""
    if all(g is gens[0] for g in gens):
        return torch.multinomial(probs, 1, generator=gens[0]).squeeze(-1)
    return torch.stack([torch.multinomial(probs[i], 1, generator=g).squeeze(-1) for i, g in enumerate(gens)])


@torch.inference_mode()
def generate(model: torch.nn.Module, requests: list[GenRequest], pad_id: int) -> list[GenResult]:
    """Decode all requests together; each row stops on its own stop ids, max_tokens or callback."""
    if not requests:
        return []
    device = next(model.parameters()).device
    bsz = len(requests)
    # rows with the same prompt (n > 1, a GRPO group) share one prefill; the KV cache is then repeated
    unique: dict[tuple[int, ...], int] = {}
    for r in requests:
        if not r.prompt_ids:
            raise ValueError("empty prompt")
        unique.setdefault(tuple(r.prompt_ids), len(unique))
    row_of = torch.tensor([unique[tuple(r.prompt_ids)] for r in requests], device=device)  # [B]
    width = max(len(p) for p in unique)
    input_ids = torch.full((len(unique), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(unique), width), dtype=torch.long)
    for p, k in unique.items():
        input_ids[k, width - len(p) :] = torch.tensor(p)
        mask[k, width - len(p) :] = 1
    input_ids, mask = input_ids.to(device), mask.to(device)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)  # [U, W]
    temps = torch.tensor([r.temperature for r in requests], dtype=torch.float32, device=device)
    top_ps = torch.tensor([r.top_p for r in requests], dtype=torch.float32, device=device)
    results = [GenResult() for _ in requests]
    active = [r.max_tokens > 0 for r in requests]
    out = model(
        input_ids=input_ids, attention_mask=mask, position_ids=positions, use_cache=True, logits_to_keep=1
    )
    cache = out.past_key_values
    if len(unique) < bsz:
        cache.reorder_cache(row_of)  # [U, ...] -> [B, ...]
    logits = out.logits[:, -1].float()[row_of]  # [B, V]
    mask = mask[row_of]  # [B, W]
    next_pos = positions[row_of, -1:] + 1  # [B, 1]
    for _ in range(max(r.max_tokens for r in requests)):
        if not any(active):
            break
        for i, r in enumerate(requests):
            if active[i] and r.constraint is not None:
                logits[i] = r.constraint.constrain(logits[i])
        logp = _processed_logprobs(logits, temps, top_ps)
        tokens = _sample(logp, temps, requests)  # [B]
        token_lp = logp.gather(-1, tokens[:, None]).squeeze(-1)
        token_list, lp_list = tokens.tolist(), token_lp.tolist()  # one device read per step, not per row
        for i, r in enumerate(requests):
            if not active[i]:
                continue
            tok, lp = token_list[i], lp_list[i]
            res = results[i]
            res.token_ids.append(tok)
            res.logprobs.append(lp)
            if r.constraint is not None:
                r.constraint.advance(tok)
            keep_going = r.on_token(tok, lp) if r.on_token is not None else True
            if (
                (tok in r.stop_ids and r.constraint is None)
                or keep_going is False
                or (r.constraint is not None and r.constraint.done)
            ):
                res.finish_reason = "stop"
                active[i] = False
            elif len(res.token_ids) >= r.max_tokens:
                active[i] = False
        if not any(active):
            break
        feed = torch.where(torch.tensor(active, device=device), tokens, torch.full_like(tokens, pad_id))
        mask = torch.cat([mask, torch.ones((bsz, 1), dtype=mask.dtype, device=device)], dim=-1)
        out = model(
            input_ids=feed[:, None],
            attention_mask=mask,
            position_ids=next_pos,
            past_key_values=cache,
            use_cache=True,
        )
        cache = out.past_key_values
        logits = out.logits[:, -1].float()
        next_pos = next_pos + 1
    return results


@torch.no_grad()
def sequence_logprobs(
    model: torch.nn.Module, prompt_ids: list[int], completion_ids: list[int], temperature: float = 1.0
) -> list[float]:
    """Reference: per-token logprobs of a completion by one full forward pass (tests compare against it)."""
    device = next(model.parameters()).device
    ids = torch.tensor([prompt_ids + completion_ids], device=device)
    logits = model(input_ids=ids).logits[0, len(prompt_ids) - 1 : -1].float() / temperature
    lp = torch.log_softmax(logits, -1)
    return lp.gather(-1, ids[0, len(prompt_ids) :, None]).squeeze(-1).tolist()
