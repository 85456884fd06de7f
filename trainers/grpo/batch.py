"""Pack scored groups into tensors for the learner, and compute completion-token logprobs with the prompt
computed once per group.

Departure from the usual recipe (TRL re-runs prompt + completion for every sample): the members of a group
share their prompt, so the learner runs each prompt once (with gradient), repeats its KV cache across the
group's rows (``index_select``, whose backward sums the rows' gradients into the shared prompt), and runs
only the completions per row. Same loss and gradients, ~G x fewer prompt tokens. ``logprobs_of`` returns
log p(token | prefix) under ``logits / temperature`` (the distribution rollouts sample from), aligned with
the sampling-time logprobs.

A completion may hold context between model turns (a merged multi-step trajectory: tool results, user
turns): ``completion_mask`` says which positions are attended, ``loss_mask`` which of them the loss trains.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import torch

from trainers.samples import Sample


@dataclass
class PackedBatch:
    prompt_ids: torch.Tensor  # [K, P] unique prompts, left-padded
    prompt_mask: torch.Tensor  # [K, P]
    row_prompt: torch.Tensor  # [B] which prompt each row continues
    completion_ids: torch.Tensor  # [B, T] right-padded
    completion_mask: torch.Tensor  # [B, T] 1.0 on completion tokens (attended)
    loss_mask: torch.Tensor  # [B, T] 1.0 on the completion tokens the loss trains (model-generated)
    behaviour: torch.Tensor  # [B, T] sampling-time logprobs (0 where unknown)
    has_behaviour: torch.Tensor  # [B] bool
    advantages: torch.Tensor  # [B]
    weights: torch.Tensor  # [B]

    @property
    def n_tokens(self) -> int:
        """Tokens the loss trains."""
        return int(self.loss_mask.sum().item())

    def to(self, device: torch.device | str) -> PackedBatch:
        """The same batch with every tensor on ``device`` (itself when they are there already)."""
        if self.completion_ids.device == torch.device(device):
            return self
        return replace(self, **{f.name: getattr(self, f.name).to(device) for f in fields(self)})


def pack(rows: list[tuple[list[int], Sample, float, float]], pad_id: int) -> PackedBatch:
    """rows: (prompt_ids, sample, advantage, weight); rows of one group share their prompt."""
    prompts: list[list[int]] = []
    index: dict[tuple[int, ...], int] = {}
    row_prompt = []
    for prompt, _, _, _ in rows:
        key = tuple(prompt)
        if key not in index:
            index[key] = len(prompts)
            prompts.append(prompt)
        row_prompt.append(index[key])
    width = max(len(p) for p in prompts)
    p_ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    p_mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for k, p in enumerate(prompts):
        p_ids[k, width - len(p) :] = torch.tensor(p)
        p_mask[k, width - len(p) :] = 1
    bsz, t_max = len(rows), max(len(s.token_ids) for _, s, _, _ in rows)
    c_ids = torch.full((bsz, t_max), pad_id, dtype=torch.long)
    c_mask = torch.zeros((bsz, t_max))
    l_mask = torch.zeros((bsz, t_max))
    behaviour = torch.zeros((bsz, t_max))
    has_b = torch.zeros(bsz, dtype=torch.bool)
    for b, (_, s, _, _) in enumerate(rows):
        n = len(s.token_ids)
        c_ids[b, :n] = torch.tensor(s.token_ids)
        c_mask[b, :n] = 1.0
        l_mask[b, :n] = 1.0 if s.loss_mask is None else torch.tensor(s.loss_mask, dtype=torch.float32)
        if s.logprobs is not None and len(s.logprobs) == n:
            behaviour[b, :n] = torch.tensor(s.logprobs)
            has_b[b] = True
    return PackedBatch(
        prompt_ids=p_ids,
        prompt_mask=p_mask,
        row_prompt=torch.tensor(row_prompt, dtype=torch.long),
        completion_ids=c_ids,
        completion_mask=c_mask,
        loss_mask=l_mask,
        behaviour=behaviour,
        has_behaviour=has_b,
        advantages=torch.tensor([a for _, _, a, _ in rows], dtype=torch.float32),
        weights=torch.tensor([w for _, _, _, w in rows], dtype=torch.float32),
    )


def logprobs_of(
    model: torch.nn.Module, batch: PackedBatch, temperature: float | torch.Tensor = 1.0
) -> torch.Tensor:
    """[B, T] log p(completion token t | prompt, tokens < t) under logits / temperature (0 on padding).
    ``temperature``: one for all rows, or [B, 1, 1] per row."""
    p_pos = (batch.prompt_mask.cumsum(-1) - 1).clamp(min=0)  # [K, P]
    out = model(  # only the last prompt position's logits are needed: skip the LM head on the others
        input_ids=batch.prompt_ids, attention_mask=batch.prompt_mask, position_ids=p_pos, use_cache=True,
        logits_to_keep=1,
    )  # fmt: skip
    cache = out.past_key_values
    first = out.logits[:, -1]  # [K, V] predicts each prompt's first completion token
    cache.reorder_cache(batch.row_prompt)  # [K, ...] -> [B, ...]; backward sums rows into their prompt
    t_max = batch.completion_ids.shape[1]
    attn = torch.cat([batch.prompt_mask[batch.row_prompt], batch.completion_mask.long()], dim=1)  # [B, P+T]
    c_pos_base = p_pos[batch.row_prompt, -1:] + 1  # [B, 1]
    c_pos = c_pos_base + torch.arange(t_max, device=c_pos_base.device)[None, :]  # [B, T]
    logits = first[batch.row_prompt][:, None]  # [B, 1, V]
    if t_max > 1:
        out2 = model(
            input_ids=batch.completion_ids[:, :-1],
            attention_mask=attn[:, :-1],
            position_ids=c_pos[:, :-1],
            past_key_values=cache,
            use_cache=True,
        )
        logits = torch.cat([logits, out2.logits], dim=1)  # [B, T, V]: position t predicts token t
    lp = torch.log_softmax(logits.float() / temperature, dim=-1)
    lp = lp.gather(-1, batch.completion_ids[:, :, None]).squeeze(-1)  # [B, T]
    return lp * batch.completion_mask
