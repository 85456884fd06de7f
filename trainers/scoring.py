"""Each token's log-probability in many token sequences under a causal LM, many sequences per forward pass.

Scoring candidates after one prompt (a canary's exposure ranks hundreds of completions after the same
chat-templated prompt) spends most of a plain batched forward on the prompt, once per row. Here the
sequences' longest common prefix runs ONCE (batch of one) and its KV cache is repeated across each batch's
rows; only the rest of each sequence (right-padded, ``batch`` rows a forward) runs per row. The log-probs
are the ones a forward of each sequence alone gives (to float rounding; ``tests/trainers/test_scoring.py``
checks). Used by the model server's echo scoring (``GenerateEngine.score``) and ``trainers.exposure``.

    lps = score_sequences(model, [prompt + c for c in completions], batch=64)
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch


def common_prefix(seqs: Sequence[Sequence[int]]) -> int:
    """How many leading tokens every sequence shares, leaving each at least one token after it."""
    if not seqs:
        return 0
    first, n = seqs[0], min(map(len, seqs)) - 1
    for i in range(max(n, 0)):
        if any(s[i] != first[i] for s in seqs):
            return i
    return max(n, 0)


def _gathered(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """log_softmax(logits)[..., ids]: logits [..., vocab] float, ids [...] -> [...]."""
    return torch.log_softmax(logits.float(), -1).gather(-1, ids[..., None])[..., 0]


@torch.no_grad()
def score_sequences(
    model: torch.nn.Module, seqs: Sequence[Sequence[int]], batch: int = 32
) -> list[list[float]]:
    """For each sequence, its tokens' log-probabilities given the tokens before them (``len(ids) - 1``
    values: the first token has none). Every sequence needs at least one token."""
    if any(len(s) < 1 for s in seqs):
        raise ValueError("a sequence to score needs at least one token")
    p = common_prefix(seqs)
    head: list[float] = []
    cache, last = None, None
    if p > 0:
        prefix = torch.tensor([list(seqs[0][:p])])  # [1, P]
        out = model(input_ids=prefix, use_cache=True)
        cache, last = out.past_key_values, out.logits[0, -1]  # last: [vocab], predicts each row's token P
        head = _gathered(out.logits[0, :-1], prefix[0, 1:]).tolist()
    result: list[list[float]] = []
    for start in range(0, len(seqs), batch):
        rows = [list(s[p:]) for s in seqs[start : start + batch]]  # each holds >= 1 token
        width = max(map(len, rows))
        x = torch.zeros(len(rows), width, dtype=torch.long)
        mask = torch.zeros(len(rows), p + width, dtype=torch.long)
        mask[:, :p] = 1
        for i, r in enumerate(rows):
            x[i, : len(r)], mask[i, p : p + len(r)] = torch.tensor(r), 1
        past = None
        if cache is not None:
            past = copy.deepcopy(cache)  # the forward appends to it; the prefix's stays whole
            past.batch_repeat_interleave(len(rows))
        logits = model(
            input_ids=x, attention_mask=mask, past_key_values=past, use_cache=past is not None
        ).logits
        lp = _gathered(logits[:, :-1], x[:, 1:])  # [B, width - 1]: token j + 1 given up to j
        first = _gathered(last.expand(len(rows), -1), x[:, 0]).tolist() if last is not None else None
        for i, r in enumerate(rows):
            tail = lp[i, : len(r) - 1].tolist()
            result.append([*head, first[i], *tail] if first is not None else tail)
    return result
