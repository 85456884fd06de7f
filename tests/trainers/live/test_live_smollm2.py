"""The live learner with the real instruct model (SmolLM2-135M-Instruct) and a real `sluice serve-model`
process: the server's recorded token ids and logprobs are the learner's own (no re-tokenization, training and
inference agree on every token), and the update is pushed to the server, which then serves version 1."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.trainers.serving.serve_process import serve_model
from trainers.config import TrainerConfig
from trainers.live.learner import LiveLearner
from trainers.live.samples import LiveRow, LiveSample
from trainers.smollm2 import SMOLLM2_NAME, smollm2_dir

pytestmark = pytest.mark.slow


def sampled(url: str, seed: int) -> tuple[LiveSample, str]:
    body = {"model": SMOLLM2_NAME, "messages": [{"role": "user", "content": "The opposite of hot, in one word?"}],
            "max_tokens": 8, "temperature": 1.0, "seed": seed, "logprobs": True, "return_token_ids": True}  # fmt: skip
    r = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=300)
    assert r.status_code == 200, r.text
    got, choice = r.json(), r.json()["choices"][0]
    sample = LiveSample(
        trajectory_id=f"t{seed}", version=1, step_index=0, prompt_ids=got["prompt_token_ids"],
        token_ids=choice["token_ids"], logprobs=[e["logprob"] for e in choice["logprobs"]["content"]],
        reward=0.0, policy_version=int(r.headers["x-sluice-policy-version"]), group_key="g", baseline_key="g",
    )  # fmt: skip
    return sample, r.headers["x-sluice-policy-version"]


def test_recorded_tokens_train_smollm2_and_the_update_serves(tmp_path: Path) -> None:
    smollm2_dir()  # the one-time GGUF conversion, outside the server's start timeout
    with serve_model(tmp_path / "serve", SMOLLM2_NAME) as server:
        (a, v_a), (b, v_b) = sampled(server.url, 1), sampled(server.url, 2)
        assert v_a == v_b == "0"
        tcfg = TrainerConfig(
            model=SMOLLM2_NAME,
            learning_rate=1e-5,
            policy_servers=[server.url],
            promotion="direct",
            live={"default_scope": "shared"},
        )
        learner = LiveLearner(tcfg, SMOLLM2_NAME, str(tmp_path / "trainer"))
        assert learner.version == 0  # the server already serves the base weights as "0"
        m = learner.train([LiveRow(sample=a, advantage=1.0), LiveRow(sample=b, advantage=-1.0)])
        # the server's logprobs are the learner's to numerical precision: nothing masked, weights ~1
        assert m["masked_frac"] == 0.0
        assert abs(m["behaviour_weight_mean"] - 1.0) < 1e-3
        assert m["policy_version"] == 1 and m["due_push"] and m["parent_version"] == "0"
        pushed = learner.publish()
        assert pushed["pushed_servers"] == 1 and pushed["push_errors"] == 0 and pushed["push_role"] == "serve"
        status = httpx.get(f"{server.url}/v1/policy", timeout=30).json()
        assert status["serving_version"] == "1"
        update = [h for h in status["history"] if h["action"] == "update"]
        assert [h["version"] for h in update] == ["1"] and update[0]["tensors"] > 0
        _, served = sampled(server.url, 3)
        assert served == "1"
