"""Benchmark: the trainer's torch work on a CUDA GPU against the same work on this machine's CPU, in one run.

Same model, prompts, rows and seed on both devices:

- ``decode``: the serving/rollout decode loop (``trainers.generation.generate``) over ``--prompts`` prompts x
  ``--group`` rows, ``--new-tokens`` sampled tokens each; tokens per second.
- ``learner``: one live-learner update (``LiveLearner.train``, full fine-tune, decoupled PPO) on those rows
  with advantages of +-1; seconds per update, after one warm-up update on each device.
- ``logprob_max_abs_diff``: the largest difference between the two devices' completion logprobs of the
  same packed batch (``logprobs_of``): the GPU trains on what the CPU would have computed.

The CPU side uses every core (``torch.set_num_threads(os.cpu_count())``): its best, not a handicap. Without
a GPU the CUDA figures are null and ``meets_targets`` is null. ``--model`` takes a local HF directory
(default: SmolLM2-135M-Instruct when installed, else the seeded sluice-tiny).

    python -m bench.accelerator                     # ~2 min on a GPU machine with SmolLM2
    python -m bench.accelerator --model DIR --prompts 8 --group 8
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import torch

TARGETS = {"decode_speedup_min": 1.0, "learner_speedup_min": 1.0, "logprob_max_abs_diff_max": 1e-3}


def default_model() -> str:
    from trainers.config import TINY_MODEL_NAME
    from trainers.smollm2 import SMOLLM2_NAME, smollm2_dir

    try:
        smollm2_dir()
    except Exception:  # not installed here: the seeded tiny model still measures the code path
        return TINY_MODEL_NAME
    return SMOLLM2_NAME


def prompts(tokenizer: Any, n: int) -> list[list[int]]:
    from trainers.tiny_model import render_chat

    asks = ["Name a colour.", "What is 2+3?", "Say hello in French.", "Give a word for fast.",
            "Name a planet.", "What is the capital of Italy?", "Count to three.", "Name a fruit."]  # fmt: skip
    return [
        tokenizer(render_chat([{"role": "user", "content": asks[i % len(asks)]}]), add_special_tokens=False)[
            "input_ids"
        ]
        for i in range(n)
    ]


def decode(model: torch.nn.Module, pad_id: int, ids: list[list[int]], group: int, new: int, seed: int):  # noqa: ANN201
    from trainers.generation import GenRequest, generate

    torch.manual_seed(seed)
    reqs = [GenRequest(p, new, temperature=1.0) for p in ids for _ in range(group)]
    device = next(model.parameters()).device
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = generate(model, reqs, pad_id)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return out, time.perf_counter() - t0


def live_rows(ids: list[list[int]], results: list, group: int, temperature: float = 1.0) -> list:
    from trainers.live.samples import LiveRow, LiveSample

    rows = []
    for i, r in enumerate(results):
        if not r.token_ids:
            continue
        sample = LiveSample(
            trajectory_id=f"t{i}", version=1, step_index=0, prompt_ids=ids[i // group], token_ids=r.token_ids,
            logprobs=r.logprobs, temperature=temperature, reward=float(i % 2), policy_version=0,
            group_key=f"p{i // group}", baseline_key="bench",
        )  # fmt: skip
        rows.append(LiveRow(sample=sample, advantage=1.0 if i % 2 else -1.0))
    return rows


def learner_s(model_source: str, device: str, rows: list, micro: int, out_dir: str) -> float:
    """Seconds of one update on ``device``, after a warm-up update."""
    from trainers.config import TrainerConfig
    from trainers.live.learner import LiveLearner

    tcfg = TrainerConfig(model=model_source, learning_rate=1e-5, micro_batch_size=micro,
                         live={"push_weights": False})  # fmt: skip
    learner = LiveLearner(tcfg, model_source, out_dir, device=device)  # type: ignore[arg-type]
    torch.set_num_threads(
        os.cpu_count() or 1
    )  # the learner sets 1 for its actor; measure the CPU at its best
    learner.train(rows)
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    learner.train(rows)
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def logprob_diff(model: torch.nn.Module, rows: list, pad_id: int) -> float:
    from trainers.grpo.batch import logprobs_of, pack
    from trainers.samples import Sample

    batch = pack(
        [(r.sample.prompt_ids, Sample(token_ids=r.sample.token_ids, logprobs=None, reward=0.0), 1.0, 1.0) for r in rows],
        pad_id,
    )  # fmt: skip
    with torch.no_grad():
        cpu = logprobs_of(model.to("cpu"), batch)
        gpu = logprobs_of(model.to("cuda"), batch.to("cuda")).cpu()
    model.to("cpu")
    return float((cpu - gpu).abs().max())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    import tempfile

    from trainers.tiny_model import load_model

    source = args.model or default_model()
    torch.set_num_threads(os.cpu_count() or 1)
    model, tok = load_model(source)
    ids = prompts(tok, args.prompts)
    results, cpu_decode_s = decode(model, tok.pad_token_id, ids, args.group, args.new_tokens, args.seed)
    tokens = sum(len(r.token_ids) for r in results)
    rows = live_rows(ids, results, args.group)
    micro = len(rows)
    cuda = torch.cuda.is_available()
    with tempfile.TemporaryDirectory() as d:
        cpu_learn = learner_s(source, "cpu", rows, micro, d)
        out: dict[str, Any] = {
            "bench": "accelerator", "model": source, "rows": len(rows), "new_tokens": args.new_tokens,
            "cpu_threads": os.cpu_count(), "device_name": torch.cuda.get_device_name() if cuda else None,
            "decode_tokens_per_s_cpu": round(tokens / cpu_decode_s, 1), "learner_s_per_update_cpu": round(cpu_learn, 3),
        }  # fmt: skip
        if not cuda:
            out.update(decode_tokens_per_s_cuda=None, learner_s_per_update_cuda=None, decode_speedup=None,
                       learner_speedup=None, logprob_max_abs_diff=None, targets=TARGETS, meets_targets=None)  # fmt: skip
            print(json.dumps(out))
            return
        gpu_model = model.to("cuda")
        decode(gpu_model, tok.pad_token_id, ids, args.group, args.new_tokens, args.seed)  # warm-up (kernels)
        gpu_results, gpu_decode_s = decode(
            gpu_model, tok.pad_token_id, ids, args.group, args.new_tokens, args.seed
        )
        gpu_tokens = sum(len(r.token_ids) for r in gpu_results)
        gpu_learn = learner_s(source, "cuda", rows, micro, d)
    diff = logprob_diff(gpu_model, rows, tok.pad_token_id)
    dec_cpu, dec_gpu = tokens / cpu_decode_s, gpu_tokens / gpu_decode_s
    out.update(
        decode_tokens_per_s_cuda=round(dec_gpu, 1), learner_s_per_update_cuda=round(gpu_learn, 4),
        decode_speedup=round(dec_gpu / dec_cpu, 2), learner_speedup=round(cpu_learn / gpu_learn, 2),
        logprob_max_abs_diff=diff, targets=TARGETS,
    )  # fmt: skip
    out["meets_targets"] = (
        out["decode_speedup"] >= TARGETS["decode_speedup_min"]
        and out["learner_speedup"] >= TARGETS["learner_speedup_min"]
        and diff <= TARGETS["logprob_max_abs_diff_max"]
    )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
