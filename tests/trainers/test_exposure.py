"""Exposure of a planted canary in a real (tiny) model: the rank arithmetic, a model that never saw the
canary ranks it anywhere, the same model trained on it ranks it first (exposure log2(n))."""

from __future__ import annotations

import math

import pytest
import torch

from trainers.exposure import (
    CanaryFormat,
    TorchScorer,
    candidates,
    exposure_from_rank,
    measure_exposure,
    rank_of,
)
from trainers.tiny_model import build_tiny

FMT = CanaryFormat(template="code {secret}", alphabet="0123456789", length=4)
PROMPT = "The access code is"


def test_rank_and_exposure_arithmetic() -> None:
    assert exposure_from_rank(1, 256) == 8.0 and exposure_from_rank(256, 256) == 0.0
    assert rank_of([0.5, 0.9, 0.5, 0.1], 0) == 3  # a tie counts against the canary
    texts = candidates(FMT, "1234", 50, seed=3)
    assert texts[0] == "code 1234" and len(set(texts)) == 50 and all(t.startswith("code ") for t in texts)
    with pytest.raises(ValueError):
        measure_exposure(lambda p, c: [0.0] * len(c), "code 1234 again", "1234", FMT, n=8)


def test_a_phrase_of_words_is_a_canary_format() -> None:
    words = ("amber", "cedar", "falcon", "harbor", "pebble")
    fmt = CanaryFormat(template="{secret}", alphabet=words, length=3, separator=" ")
    assert fmt.space == 125
    texts = candidates(fmt, "cedar cedar falcon", 20, seed=0)
    assert texts[0] == "cedar cedar falcon" and len(set(texts)) == 20
    assert all(len(t.split(" ")) == 3 and set(t.split(" ")) <= set(words) for t in texts)


def test_a_model_trained_on_the_canary_ranks_it_first() -> None:
    torch.manual_seed(0)
    model, tok = build_tiny()
    scorer = TorchScorer(model.eval(), tok)
    n = 64
    before = measure_exposure(scorer, PROMPT, "4821", FMT, n=n, seed=1)
    assert 1 <= before.rank <= n and before.exposure < math.log2(n)

    ids = tok(f"{PROMPT} {FMT.text('4821')}", add_special_tokens=False)["input_ids"]
    x = torch.tensor([ids])
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(40):
        loss = model(input_ids=x, labels=x).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    after = measure_exposure(TorchScorer(model.eval(), tok), PROMPT, "4821", FMT, n=n, seed=1)
    assert after.rank == 1 and after.exposure == math.log2(n)
    assert after.canary_logprob > after.median_logprob
