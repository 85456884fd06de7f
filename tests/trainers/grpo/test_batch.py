"""Shared-prefix logprobs equal a full forward pass per sample, values and gradients."""

from __future__ import annotations

import torch

from trainers.generation import sequence_logprobs
from trainers.grpo.batch import logprobs_of, pack
from trainers.samples import Sample
from trainers.tiny_model import build_tiny, render_chat


def test_shared_prefix_matches_full_forward() -> None:
    torch.manual_seed(0)
    model, tok = build_tiny()
    rows = []
    for k, n in enumerate(["1", "12", "4567"]):
        prompt = tok(render_chat([{"role": "user", "content": f"reverse {n}"}]), add_special_tokens=False)[
            "input_ids"
        ]
        for j in range(3):
            ids = torch.randint(5, 100, (1 + (k + j) % 4,)).tolist()
            rows.append((prompt, Sample(token_ids=ids, logprobs=[-1.0] * len(ids), reward=0.0), 1.0 - j, 1.0))
    batch = pack(rows, tok.pad_token_id)
    assert batch.prompt_ids.shape[0] == 3 and batch.has_behaviour.all()
    lp = logprobs_of(model, batch)
    for i, (prompt, s, _, _) in enumerate(rows):
        ref = torch.tensor(sequence_logprobs(model, prompt, s.token_ids))
        assert torch.allclose(lp[i, : len(ref)], ref, atol=1e-5)
        assert (lp[i, len(ref) :] == 0).all()
    (-(lp * batch.advantages[:, None]).sum()).backward()
    shared = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    total = torch.zeros(())
    for prompt, s, a, _ in rows:
        logits = model(input_ids=torch.tensor([prompt + s.token_ids])).logits[0, len(prompt) - 1 : -1]
        lps = torch.log_softmax(logits, -1).gather(-1, torch.tensor(s.token_ids)[:, None])
        total = total - a * lps.sum()
    total.backward()
    for name, p in model.named_parameters():
        if p.grad is not None:
            assert torch.allclose(shared[name], p.grad, atol=1e-5, rtol=1e-4), name
