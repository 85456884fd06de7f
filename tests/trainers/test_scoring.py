"""Batched scoring (a shared prompt's KV cache, right-padded rows) gives each sequence the log-probs a forward
of that sequence alone gives, on a real tiny model; exposure read batched equals exposure read one by one."""

from __future__ import annotations

import torch

from trainers.exposure import (
    CanaryFormat,
    TorchScorer,
    candidates,
    completion_ids,
    measure_exposure,
    rank_of,
)
from trainers.scoring import common_prefix, score_sequences
from trainers.tiny_model import build_tiny

PROMPT = "<|im_start|>user\nRepeat the access code<|im_end|>\n<|im_start|>assistant\n"
FMT = CanaryFormat(template="code {secret}", alphabet="0123456789", length=4)


def alone(model: torch.nn.Module, ids: list[int]) -> list[float]:
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0, :-1].float()
    return torch.log_softmax(logits, -1).gather(1, torch.tensor(ids[1:])[:, None])[:, 0].tolist()


def test_common_prefix_leaves_every_sequence_a_token() -> None:
    assert common_prefix([[1, 2, 3, 4], [1, 2, 5]]) == 2
    assert common_prefix([[1, 2, 3], [1, 2, 3]]) == 2
    assert common_prefix([[1, 2, 3]]) == 2 and common_prefix([[7], [7, 8]]) == 0
    assert common_prefix([[1, 2], [3, 2]]) == 0 and common_prefix([]) == 0


def test_batched_scores_equal_one_at_a_time() -> None:
    torch.manual_seed(0)
    model, tok = build_tiny()
    model.eval()
    texts = candidates(FMT, "4821", 24, seed=2) + ["code 12", "code 123456789"]  # uneven lengths: padding
    rows = [completion_ids(tok, PROMPT, t) for t in texts]
    seqs = [p + c for p, c in rows]
    want = [alone(model, s) for s in seqs]
    for batch in (7, 64):
        got = score_sequences(model, seqs, batch=batch)
        assert [len(g) for g in got] == [len(s) - 1 for s in seqs]
        for g, w in zip(got, want, strict=True):
            assert torch.allclose(torch.tensor(g), torch.tensor(w), atol=1e-4), (batch, g, w)
    # no shared prefix (the first tokens differ): plain right-padded batches
    mixed = [seqs[0], [tok.convert_tokens_to_ids("x"), *seqs[1][1:]]]
    for g, w in zip(score_sequences(model, mixed, batch=2), [alone(model, s) for s in mixed], strict=True):
        assert torch.allclose(torch.tensor(g), torch.tensor(w), atol=1e-4)

    # the exposure read batched ranks the canary where the one-at-a-time sums rank it
    batched = measure_exposure(TorchScorer(model, tok, batch=16), PROMPT, "4821", FMT, n=24, seed=2)
    summed = [sum(w[len(p) - 1 :]) for w, (p, _c) in zip(want, rows, strict=True)]
    assert batched.rank == rank_of(summed[:24], 0) and abs(batched.canary_logprob - summed[0]) < 1e-3
