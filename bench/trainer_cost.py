"""Learner cost per trajectory: a multi-step trajectory trained as one merged sequence vs one sample per step.

Synthetic agent trajectories shaped as the proxy records them (a prompt, then per step a model completion
and a tool result the next step re-sends with the whole history: ``prompt_token_prefix_len`` covers the
previous prompt + completion) go through the real ``extract_samples``, merged and with ``merge=False``
(the per-step recipe: every step a sample whose prompt is the whole history). The learner's ``train`` on
those rows is timed (wall, median of ``--repeats``, after one warm-up update), per trajectory, on 2-, 10- and
20-step trajectories. Per step the prefix is re-read with the per-step recipe, so its cost grows with
the square of the steps; merged it grows with the sequence.

    python -m bench.trainer_cost                  # tiny model (sluice-tiny), ~1-2 minutes on 2 cores
    python -m bench.trainer_cost --model smollm2-135m-instruct

Ends with one JSON line (``cost_ratio_merged_vs_per_step_20`` target <= 0.25, ``cost_growth_20_vs_2_merged``
target <= 12), also appended as a run to docs/benchmarks/trainer_cost.jsonl (the benchmark tables:
``python docs/render_benchmarks.py``).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime

import torch

from bench.record import commit, record_run
from sluice.events import Trajectory
from testing.live_steps import chained_trajectory
from trainers.config import TrainerConfig
from trainers.live.extract import extract_samples
from trainers.live.learner import LiveLearner
from trainers.live.samples import LiveRow

TARGETS = {"cost_ratio_merged_vs_per_step_20": "<= 0.25", "cost_growth_20_vs_2_merged": "<= 12"}
MODEL_GLOB = "bench-*"


def rows_of(trajs: list[Trajectory], tokenizer: object, merge: bool) -> list[LiveRow]:
    rows = []
    for k, t in enumerate(trajs):
        item = extract_samples(t, tokenizer, [MODEL_GLOB], 1_000_000, merge=merge)
        rows += [LiveRow(sample=s, advantage=1.0 if k % 2 else -1.0) for s in item.samples]
    return rows


def time_train(learner: LiveLearner, rows: list[LiveRow], repeats: int) -> float:
    walls = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        learner.train(rows)
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="sluice-tiny")
    ap.add_argument("--steps", type=int, nargs="+", default=[2, 10, 20])
    ap.add_argument("--trajectories", type=int, default=4, help="trajectories per update (one group)")
    ap.add_argument("--prompt-tokens", type=int, default=96)
    ap.add_argument("--completion-tokens", type=int, default=16)
    ap.add_argument("--tool-tokens", type=int, default=24)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-record", action="store_true", help="print only; write nothing under docs/")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    cfg = TrainerConfig(learning_rate=1e-5, micro_batch_size=8, live={"push_weights": False,
                                                                       "default_scope": "shared"})  # fmt: skip
    with tempfile.TemporaryDirectory() as out_dir:
        learner = LiveLearner(cfg, args.model, out_dir)
        vocab = int(learner.model.get_input_embeddings().weight.shape[0])
        rng = random.Random(0)
        warm = [chained_trajectory("warm", 2, rng, vocab, args.prompt_tokens, args.completion_tokens, 8)]
        learner.train(rows_of(warm, learner.tokenizer, True))  # warm-up: allocator, kernels
        figures: dict[str, float] = {}
        for n in args.steps:
            trajs = [
                chained_trajectory(f"t{n}-{k}", n, rng, vocab, args.prompt_tokens, args.completion_tokens,
                                     args.tool_tokens)
                for k in range(args.trajectories)
            ]  # fmt: skip
            for label, merge in (("merged", True), ("per_step", False)):
                rows = rows_of(trajs, learner.tokenizer, merge)
                wall = time_train(learner, rows, args.repeats)
                figures[f"train_s_per_trajectory_{label}_{n}"] = round(wall / len(trajs), 4)
                figures[f"rows_{label}_{n}"] = len(rows)
                print(f"{n:>3} steps {label:>8}: {len(rows):>4} rows, {wall / len(trajs):.4f} s/trajectory",
                      file=sys.stderr)  # fmt: skip
    first, last = min(args.steps), max(args.steps)
    result = {
        "bench": "trainer_cost",
        "cost_ratio_merged_vs_per_step_20": round(
            figures[f"train_s_per_trajectory_merged_{last}"]
            / figures[f"train_s_per_trajectory_per_step_{last}"],
            3,
        ),
        "cost_growth_20_vs_2_merged": round(
            figures[f"train_s_per_trajectory_merged_{last}"]
            / figures[f"train_s_per_trajectory_merged_{first}"],
            2,
        ),
        "cost_growth_20_vs_2_per_step": round(
            figures[f"train_s_per_trajectory_per_step_{last}"]
            / figures[f"train_s_per_trajectory_per_step_{first}"],
            2,
        ),
        **figures,
        "model": args.model,
        "trajectories_per_update": args.trajectories,
        "prompt_tokens": args.prompt_tokens,
        "completion_tokens": args.completion_tokens,
        "tool_tokens": args.tool_tokens,
        "threads": args.threads,
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": commit(),
        "command": " ".join(["python -m bench.trainer_cost", *sys.argv[1:]]),
    }
    line = json.dumps(result)
    if not args.no_record:
        record_run("trainer_cost", result, TARGETS, headline=list(TARGETS), command=result["command"],
                   notes=f"{args.model}, {args.trajectories} trajectories per update, prompt {args.prompt_tokens}, "
                   f"{args.completion_tokens} generated + {args.tool_tokens} tool tokens per step")  # fmt: skip
    print(line)


if __name__ == "__main__":
    main()
