"""Benchmark: the live learner on SmolLM2-135M-Instruct, full fine-tune vs LoRA, same task, samples and seeds.

Each arm runs the live-mode code path on-policy in one process: the policy samples a GRPO group per prompt
with the serving engine's decode loop (behaviour logprobs as `sluice serve-model` reports them), a checker
grades the answers (the opposite of a word; reward 1 when the answer names it: base rate ~0.3),
``GroupAssembler`` turns rewards into advantages, ``LiveLearner.train`` updates. Figures per arm: learner
seconds per sample (the update alone, and the update plus making the push tensors and writing them as the
file a policy server reads), push size, and the mean reward of the first and last rounds.

    python -m bench.live_learner [--rounds 10] [--arms full,lora]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

WORDS = [("hot", "cold"), ("big", "small"), ("up", "down"), ("fast", "slow"), ("day", "night"),
         ("happy", "sad"), ("open", "closed"), ("light", "dark"), ("wet", "dry"), ("old", "new"),
         ("hard", "soft"), ("early", "late")]  # fmt: skip
ARMS = {"full": {"lora_rank": 0, "learning_rate": 2e-5}, "lora": {"lora_rank": 16, "learning_rate": 5e-4}}
PROMPTS_PER_ROUND, GROUP, MAX_NEW, TEMPERATURE = 4, 4, 10, 0.8


def grade(text: str, answer: str) -> float:
    words = "".join(c.lower() if c.isalpha() else " " for c in text).split()
    return 1.0 if answer in words else 0.0


def run_arm(name: str, rounds: int, seed: int, out_dir: Path) -> dict[str, Any]:
    from trainers.config import TrainerConfig
    from trainers.generation import GenRequest, generate
    from trainers.live.grouping import GroupAssembler
    from trainers.live.learner import LiveLearner
    from trainers.live.samples import LiveSample
    from trainers.live.weight_push import WeightPush
    from trainers.smollm2 import SMOLLM2_NAME

    arm = ARMS[name]
    tcfg = TrainerConfig(
        model=SMOLLM2_NAME, learning_rate=arm["learning_rate"], seed=seed, micro_batch_size=GROUP * 2,
        live={"push_weights": False, "lora_rank": arm["lora_rank"], "lora_alpha": 2.0 * max(1, arm["lora_rank"])},
    )  # fmt: skip
    learner = LiveLearner(tcfg, SMOLLM2_NAME, str(out_dir))
    tok = learner.tokenizer
    stops = frozenset({tok.eos_token_id, tok.convert_tokens_to_ids("<|im_end|>")})
    writer = WeightPush([], "file", 60, out_dir / "push")
    groups = GroupAssembler(GROUP, 0.0, 0.9, scale=True)
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    rewards, learn_s, push_s, samples = [], [], [], 0
    push_mb = 0.0
    for r in range(rounds):
        picked = rng.sample(WORDS, PROMPTS_PER_ROUND)
        prompts = []
        for word, _ in picked:
            msgs = [{"role": "user", "content": f"Answer with one word: the opposite of {word}."}]
            text = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
            prompts.append(tok(text, add_special_tokens=False)["input_ids"])
        reqs = [
            GenRequest(p, MAX_NEW, TEMPERATURE, generator=gen, stop_ids=stops)
            for p in prompts
            for _ in range(GROUP)
        ]
        learner.model.eval()
        results = generate(learner.model, reqs, tok.pad_token_id or 0)
        learner.model.train()
        round_rewards = []
        for i, res in enumerate(results):
            (word, answer), prompt = picked[i // GROUP], prompts[i // GROUP]
            reward = grade(tok.decode(res.token_ids, skip_special_tokens=True), answer)
            round_rewards.append(reward)
            s = LiveSample(
                trajectory_id=f"{name}-{r}-{i}", version=1, step_index=0, prompt_ids=prompt,
                token_ids=res.token_ids, logprobs=res.logprobs, reward=reward, policy_version=learner.version,
                temperature=TEMPERATURE, group_key=f"{r}:{word}", baseline_key=word,
            )  # fmt: skip
            groups.add(s_item(s), now=float(r))
        rewards.append(statistics.fmean(round_rewards))
        rows = groups.take_ready(now=float(r))
        if rows:
            m = learner.train(rows)
            learn_s.append(m["learn_s"] / len(rows))
            samples += len(rows)
            t0 = time.perf_counter()
            tensors = learner.pushed_tensors()
            path = writer.write_file(tensors, str(learner.version))
            push_s.append(time.perf_counter() - t0)
            push_mb = path.stat().st_size / 2**20
        print(json.dumps({"arm": name, "round": r, "reward": rewards[-1], "trained": len(rows),
                          "learn_s_per_sample": learn_s[-1] if rows else None}), flush=True)  # fmt: skip
    k = max(1, rounds // 4)
    per_sample = statistics.median(learn_s) if learn_s else float("nan")
    return {
        "learn_s_per_sample": per_sample,
        "push_prepare_s": statistics.median(push_s) if push_s else float("nan"),
        "push_mb": push_mb,
        "trained_samples": samples,
        "reward_first": statistics.fmean(rewards[:k]),
        "reward_last": statistics.fmean(rewards[-k:]),
        "trainable_params": sum(p.numel() for p in learner.model.parameters() if p.requires_grad),
    }


def s_item(sample: Any) -> Any:
    from trainers.live.samples import LiveItem

    return LiveItem(trajectory_id=sample.trajectory_id, version=1, samples=[sample])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--arms", default="full,lora")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    out: dict[str, Any] = {"model": "smollm2-135m-instruct", "rounds": args.rounds,
                           "samples_per_round": PROMPTS_PER_ROUND * GROUP}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="sluice-live-bench-") as tmp:
        for name in args.arms.split(","):
            out[name] = run_arm(name, args.rounds, args.seed, Path(tmp) / name)
    if "full" in out and "lora" in out:
        full, lora = out["full"], out["lora"]
        out["lora_speedup_per_sample"] = full["learn_s_per_sample"] / lora["learn_s_per_sample"]
        out["lora_speedup_with_push"] = (
            full["learn_s_per_sample"] * out["samples_per_round"] + full["push_prepare_s"]
        ) / (lora["learn_s_per_sample"] * out["samples_per_round"] + lora["push_prepare_s"])
    print(json.dumps(out))


if __name__ == "__main__":
    main()
