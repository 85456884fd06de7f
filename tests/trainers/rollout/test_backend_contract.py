"""The rollout-backend contract, run against every backend (vLLM cases skip without vLLM and CUDA)."""

from __future__ import annotations

import pytest
import torch

from trainers.generation import sequence_logprobs
from trainers.rollout.base import RolloutBackend, SamplingSpec
from trainers.rollout.select import build_backend, resolve_backend
from trainers.tiny_model import build_tiny, render_chat


def _needs(kind: str) -> None:
    if kind == "vllm":
        pytest.importorskip("vllm")
        if not torch.cuda.is_available():
            pytest.skip("vLLM backend needs CUDA")


@pytest.fixture(params=["hf", pytest.param("vllm", marks=pytest.mark.gpu)])
def backend(request: pytest.FixtureRequest) -> RolloutBackend:
    _needs(request.param)
    torch.set_num_threads(1)
    model, tok = build_tiny()
    b = build_backend(request.param, model, tok, version=3)
    b.test_model, b.test_tokenizer = build_tiny()  # an untouched copy for reference logprobs
    return b


def prompts(b: RolloutBackend) -> list[list[int]]:
    tok = b.test_tokenizer
    return [
        tok(render_chat([{"role": "user", "content": f"reverse {n}"}]), add_special_tokens=False)["input_ids"]
        for n in (5, 413)
    ]


def test_shapes_versions_and_finish_reasons(backend: RolloutBackend) -> None:
    out = backend.generate(prompts(backend), SamplingSpec(n=4, max_tokens=6, temperature=1.0, seed=0))
    assert len(out) == 2 and all(len(g) == 4 for g in out)
    eos = backend.test_tokenizer.eos_token_id
    for group in out:
        for c in group:
            assert 1 <= len(c.token_ids) <= 6 and len(c.logprobs) == len(c.token_ids)
            assert all(lp <= 0 for lp in c.logprobs)
            assert c.policy_version == 3 == backend.policy_version
            assert c.finish_reason in ("stop", "length")
            assert (c.token_ids[-1] == eos) == (c.finish_reason == "stop") or len(c.token_ids) == 6
            assert c.text == backend.test_tokenizer.decode(c.token_ids, skip_special_tokens=True)


def test_sampling_time_logprobs_match_the_trainer(backend: RolloutBackend) -> None:
    tol = 1e-4 if backend.name == "hf" else 2e-2
    ps = prompts(backend)
    out = backend.generate(ps, SamplingSpec(n=2, max_tokens=5, temperature=0.8, seed=1))
    for p, group in zip(ps, out, strict=True):
        for c in group:
            ref = sequence_logprobs(backend.test_model, p, c.token_ids, temperature=0.8)
            assert max(abs(a - b) for a, b in zip(ref, c.logprobs, strict=True)) < tol


def test_seeded_generation_is_reproducible(backend: RolloutBackend) -> None:
    spec = SamplingSpec(n=3, max_tokens=5, temperature=1.0, seed=11)
    a = backend.generate(prompts(backend), spec)
    b = backend.generate(prompts(backend), spec)
    assert [[c.token_ids for c in g] for g in a] == [[c.token_ids for c in g] for g in b]


def test_load_weights_changes_policy_and_version(backend: RolloutBackend) -> None:
    spec = SamplingSpec(n=1, max_tokens=4, temperature=1.0, seed=5)
    before = backend.generate(prompts(backend), spec)
    state = {k: v.clone() for k, v in backend.test_model.state_dict().items()}
    with torch.no_grad():
        state["lm_head.weight"] *= 3.0  # sharper distribution, same argmax
        if "model.embed_tokens.weight" in state:
            state["model.embed_tokens.weight"] = state["lm_head.weight"]
    backend.load_weights(state, version=4)
    after = backend.generate(prompts(backend), spec)
    assert backend.policy_version == 4 and after[0][0].policy_version == 4
    assert [c.logprobs for g in before for c in g] != [c.logprobs for g in after for c in g]


def test_auto_picks_hf_without_cuda() -> None:
    if torch.cuda.is_available():
        pytest.skip("CUDA present")
    assert resolve_backend("auto") == "hf"
    from trainers.exceptions import BackendUnavailable

    with pytest.raises(BackendUnavailable, match="vllm"):
        resolve_backend("vllm")
