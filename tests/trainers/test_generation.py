"""The batched decode loop: sampling-time logprobs equal a full forward pass; seeds; stops; callbacks."""

from __future__ import annotations

import torch

from trainers.generation import GenRequest, generate, sequence_logprobs
from trainers.tiny_model import build_tiny, render_chat

MODEL, TOK = build_tiny()


def prompt(text: str) -> list[int]:
    return TOK(render_chat([{"role": "user", "content": text}]), add_special_tokens=False)["input_ids"]


def test_logprobs_match_full_forward_with_shared_and_padded_prompts() -> None:
    prompts = [prompt("reverse 1"), prompt("reverse 1"), prompt("reverse 98765"), prompt("hi")]
    g = torch.Generator().manual_seed(0)
    reqs = [GenRequest(p, 6, temperature=0.7, generator=g) for p in prompts]
    for p, res in zip(prompts, generate(MODEL, reqs, TOK.pad_token_id), strict=True):
        assert len(res.token_ids) == 6 and res.finish_reason == "length"
        ref = sequence_logprobs(MODEL, p, res.token_ids, temperature=0.7)
        assert torch.allclose(torch.tensor(res.logprobs), torch.tensor(ref), atol=1e-4)


def test_per_row_seeds_do_not_depend_on_batch_mates() -> None:
    p = prompt("reverse 42")
    alone = generate(MODEL, [GenRequest(p, 5, generator=torch.Generator().manual_seed(3))], TOK.pad_token_id)
    mates = [
        GenRequest(prompt("other"), 3, generator=torch.Generator().manual_seed(9)),
        GenRequest(p, 5, generator=torch.Generator().manual_seed(3)),
    ]
    batched = generate(MODEL, mates, TOK.pad_token_id)
    assert batched[1].token_ids == alone[0].token_ids


def test_greedy_stop_ids_and_callback() -> None:
    p = prompt("reverse 7")
    greedy = generate(MODEL, [GenRequest(p, 4, temperature=0.0)], TOK.pad_token_id)[0]
    first = greedy.token_ids[0]
    stopped = generate(
        MODEL, [GenRequest(p, 4, temperature=0.0, stop_ids=frozenset({first}))], TOK.pad_token_id
    )[0]
    assert stopped.token_ids == [first] and stopped.finish_reason == "stop"
    seen: list[int] = []
    cut = generate(
        MODEL,
        [GenRequest(p, 4, temperature=0.0, on_token=lambda t, lp: seen.append(t) or len(seen) < 2)],
        TOK.pad_token_id,
    )[0]
    assert seen == cut.token_ids == greedy.token_ids[:2] and cut.finish_reason == "stop"
