"""`sluice serve-model` (tiny model, a real process) scores an echoed prompt under the policy version a
request names: each token's log-probability matches a forward pass of that version in this process, and the
exposure read through the server equals the one read in process."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
import torch

from sluice.policy_client import PolicyClient
from trainers.exposure import CanaryFormat, ServerScorer, TorchScorer, measure_exposure
from trainers.tiny_model import build_tiny

from .serve_process import ServeProcess, serve_model
from .test_policy_server import MODEL

PICK = "x-sluice-policy-version"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    with serve_model(tmp_path_factory.mktemp("scoring"), MODEL, {"max_versions": 4}) as proc:
        yield proc


def test_scores_follow_the_named_version(server: ServeProcess) -> None:
    base, tok = build_tiny()
    cand = build_tiny()[0]
    gen = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for p in cand.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 0.05)
    PolicyClient(server.url).push_candidate_state_dict(cand.state_dict(), "cand")
    ids = tok("The access code is code 4821", add_special_tokens=False)["input_ids"]
    body = {"model": MODEL, "prompt": ids, "echo": True, "logprobs": 0, "max_tokens": 0}
    for version, model in (("0", base), ("cand", cand)):
        resp = httpx.post(f"{server.url}/v1/completions", json=body, headers={PICK: version}, timeout=60)
        assert resp.status_code == 200, resp.text
        assert resp.headers[PICK] == version
        lps = resp.json()["choices"][0]["logprobs"]["token_logprobs"]
        assert lps[0] is None and len(lps) == len(ids)
        with torch.no_grad():
            logits = model.eval()(torch.tensor([ids])).logits[0, :-1]
        want = torch.log_softmax(logits.float(), -1).gather(1, torch.tensor(ids[1:])[:, None])[:, 0]
        assert torch.allclose(torch.tensor(lps[1:]), want, atol=1e-4)

    # several token-id prompts of different lengths in one request: each scored as if alone
    body = {**body, "prompt": [ids, ids[:3]]}
    resp = httpx.post(f"{server.url}/v1/completions", json=body, headers={PICK: "cand"}, timeout=60)
    batched = [c["logprobs"]["token_logprobs"] for c in resp.json()["choices"]]
    assert len(batched[1]) == 3 and torch.allclose(
        torch.tensor(batched[1][1:]), torch.tensor(lps[1:3]), atol=1e-4
    )

    fmt = CanaryFormat(length=3)
    served = measure_exposure(ServerScorer(server.url, tok, "cand", MODEL), "The code is", "482", fmt, n=16)
    local = measure_exposure(TorchScorer(cand, tok), "The code is", "482", fmt, n=16)
    assert served.rank == local.rank and abs(served.canary_logprob - local.canary_logprob) < 1e-3
