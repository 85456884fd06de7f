"""Probe the base reward of the verifiable tasks on a model, sampled as the policy server samples.

Prompts are rendered and sampled exactly as ``sluice serve-model`` does (ChatML, the batched decode loop,
the task's own ``max_tokens``), and each reply is graded by its task's checker. The benchmark's task must
start between 0.1 and 0.6: low enough to have room, high enough that some group members get a reward.

    python -m bench.task_probe --model smollm2-135m-instruct --samples 48 --temperature 1.0
"""

from __future__ import annotations

import argparse
import json
import random
import time

import torch

from pipeline.learn.tasks import TASKS, build_tasks
from trainers.generation import GenRequest, generate
from trainers.tiny_model import load_model, render_chat


def probe(model_name: str, names: list[str], samples: int, temperature: float, seed: int, batch: int) -> dict:
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    t0 = time.perf_counter()
    model, tok = load_model(model_name)
    load_s = time.perf_counter() - t0
    stop = frozenset(i for i in (tok.eos_token_id, tok.convert_tokens_to_ids("<|im_end|>")) if i is not None)
    out: dict = {
        "model": model_name,
        "temperature": temperature,
        "samples": samples,
        "load_s": round(load_s, 1),
    }
    for task in build_tasks(names):
        rng = random.Random(seed)
        problems = [task.draw(rng) for _ in range(samples)]
        t1 = time.perf_counter()
        scores, examples = [], []
        for i in range(0, samples, batch):
            chunk = problems[i : i + batch]
            reqs = [
                GenRequest(
                    prompt_ids=tok(render_chat(p.messages), add_special_tokens=False)["input_ids"],
                    max_tokens=task.max_tokens,
                    temperature=temperature,
                    stop_ids=stop,
                )
                for p in chunk
            ]
            for p, res in zip(chunk, generate(model, reqs, tok.pad_token_id), strict=True):
                reply = tok.decode(res.token_ids, skip_special_tokens=True)
                scores.append(task.grade(p, reply))
                if len(examples) < 4:
                    examples.append(reply)
        out[task.name] = {
            "reward": round(sum(scores) / len(scores), 3),
            "seconds": round(time.perf_counter() - t1, 1),
            "examples": examples,
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--tasks", nargs="+", default=sorted(TASKS))
    ap.add_argument("--samples", type=int, default=48)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=16)
    args = ap.parse_args()
    print(json.dumps(probe(args.model, args.tasks, args.samples, args.temperature, args.seed, args.batch)))


if __name__ == "__main__":
    main()
