"""Several policy versions in one `sluice serve-model` process: memory per extra version and decode speed when
rows are spread over versions, with the real instruct model (SmolLM2-135M-Instruct, fp32, 538 MB).

In process (the server's own ``PolicyStore`` and ``GenerateEngine``, no HTTP), one run:

- process RSS with the default version only, then after ``--versions`` candidates that each replace the
  attention projections (q/k/v/o of every layer: what a merged LoRA update on those modules replaces), then
  after ``--full-versions`` candidates that each replace every tensor. Versions share what they did not
  replace, so an extra version should cost what it replaced: the store's own count (``added_bytes``) is
  printed beside the measured RSS growth;
- decode tokens/s of ``--rows`` single-choice requests all on the default version (one batch), against the
  same requests spread round robin over the default and the attention candidates (one batch per version,
  taken in turns: the price of keeping a batch to one version on a CPU model server). Best of
  ``--repeats``; every row decodes ``--tokens`` tokens (end-of-sequence ignored). Also the canary case:
  the rows split half and half over the default and one candidate.

Ends with one JSON line, also appended as a run to docs/benchmarks/policy_versions.jsonl (``--no-record``:
print only).

    python -m bench.policy_versions            # ~1-2 min on two cores
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import torch

from bench.record import commit, record_run
from trainers.serving.engine import GenerateEngine
from trainers.serving.policy_store import PolicyStore
from trainers.smollm2 import SMOLLM2_NAME
from trainers.tiny_model import load_model

ATTENTION = ("q_proj.weight", "k_proj.weight", "v_proj.weight", "o_proj.weight")
HEADLINE = ["rss_mb_per_extra_version", "decode_tokens_per_s_ratio_mixed_vs_single"]
MB = 1024 * 1024


def rss_mb() -> float:
    gc.collect()
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def add_candidates(store: PolicyStore, model: torch.nn.Module, names: list[str], count: int, tag: str) -> int:
    """``count`` candidates, each replacing ``names`` with new tensors; returns the bytes the store counts."""
    added = 0
    state = model.state_dict()
    for k in range(count):
        update = {n: state[n] * (1.0 + 0.01 * (k + 1)) for n in names}  # new storage, as a pushed update has
        store.apply(store.prepare_update(f"{tag}{k}", update, role="candidate"))
        info = store.info(f"{tag}{k}")
        added += 0 if info is None else info.added_bytes
        del update
    return added


def decode_tokens_per_s(
    engine: GenerateEngine, prompt: list[int], asks: list[str | None], tokens: int
) -> float:
    """Every row of ``asks`` (the version each asks for) submitted at once; generated tokens per second."""
    args = {"prompt_ids": prompt, "n": 1, "max_tokens": tokens, "temperature": 1.0, "top_p": 1.0,
            "stop_ids": frozenset(), "stop": ()}  # fmt: skip

    async def one(i: int, version: str | None) -> int:
        return sum([ev.result is None async for ev in engine.submit({**args, "seed": i, "version": version})])

    async def run() -> tuple[int, float]:
        t0 = time.perf_counter()
        counts = await asyncio.gather(*(one(i, v) for i, v in enumerate(asks)))
        return sum(counts), time.perf_counter() - t0

    generated, wall = asyncio.run(run())
    return generated / wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--versions", type=int, default=4, help="attention-only candidates")
    parser.add_argument("--full-versions", type=int, default=2, help="candidates replacing every tensor")
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-record", action="store_true", help="print only; write nothing under docs/")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, tok = load_model(SMOLLM2_NAME)
    total = 1 + args.versions + args.full_versions
    store = PolicyStore(model, SMOLLM2_NAME, keep=1, max_versions=total)
    names = list(model.state_dict())
    with (
        torch.no_grad()
    ):  # the loader maps the weights file lazily: make every page resident before measuring
        for t in model.state_dict().values():
            t.sum()
    attention = [n for n in names if n.endswith(ATTENTION)]
    base_mb = rss_mb()
    attn_added = add_candidates(store, model, attention, args.versions, "attn")
    attn_mb = rss_mb()
    full_added = add_candidates(store, model, names, args.full_versions, "full")
    full_mb = rss_mb()

    engine = GenerateEngine(model, tok, max_batch=args.rows, versions=store).start()
    spread: list[str | None] = [None, *(f"attn{k}" for k in range(args.versions))]
    mixed = [spread[i % len(spread)] for i in range(args.rows)]
    prompt = tok("<|im_start|>user\nWrite a short poem about rivers.<|im_end|>\n<|im_start|>assistant\n")[
        "input_ids"
    ]
    try:
        decode_tokens_per_s(engine, prompt, [None] * 2, 4)  # warm-up
        canary = [
            None if i % 2 else "attn0" for i in range(args.rows)
        ]  # a canary arm: two versions, half each
        runs: dict[str, list[float]] = {"single": [], "mixed": [], "canary": []}
        for _ in range(args.repeats):  # interleaved, so a neighbour's load on the CPU hits all three alike
            for kind, asks in (("single", [None] * args.rows), ("mixed", mixed), ("canary", canary)):
                runs[kind].append(decode_tokens_per_s(engine, prompt, asks, args.tokens))
        single, mixed_tps, canary_tps = (max(runs[k]) for k in ("single", "mixed", "canary"))
    finally:
        engine.stop()
    result = {
        "bench": "policy_versions",
        "model": SMOLLM2_NAME,
        "rss_mb_default_only": round(base_mb, 1),
        "rss_mb_per_extra_version": round((attn_mb - base_mb) / max(1, args.versions), 1),
        "added_mb_per_extra_version": round(attn_added / MB / max(1, args.versions), 1),
        "rss_mb_per_extra_version_full": round((full_mb - attn_mb) / max(1, args.full_versions), 1),
        "added_mb_per_extra_version_full": round(full_added / MB / max(1, args.full_versions), 1),
        "tensors_per_attention_version": len(attention),
        "versions_served": len(store.kept()),
        "rows": args.rows,
        "tokens_per_row": args.tokens,
        "versions_in_mixed_decode": len(set(mixed)),
        "decode_tokens_per_s_single": round(single, 1),
        "decode_tokens_per_s_mixed": round(mixed_tps, 1),
        "decode_tokens_per_s_ratio_mixed_vs_single": round(mixed_tps / single, 3),
        "decode_tokens_per_s_two_versions": round(canary_tps, 1),
        "decode_tokens_per_s_ratio_two_versions_vs_single": round(canary_tps / single, 3),
        "threads": args.threads,
        "load_average_1m": round(
            os.getloadavg()[0], 2
        ),  # the machine's load: decode figures are noisy above cores
        "cpu_count": os.cpu_count(),
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": commit(),
        "command": "python -m bench.policy_versions " + " ".join(sys.argv[1:]),
    }
    if not args.no_record:
        measured = {k: v for k, v in result.items() if k not in ("threads", "load_average_1m", "cpu_count")}
        record_run("policy_versions", measured, {}, headline=HEADLINE, command=result["command"],
                   notes=f"SmolLM2-135M-Instruct; an extra version replacing q/k/v/o of every layer vs every "
                   f"tensor; decode of {args.rows} rows x {args.tokens} tokens on one version vs spread over "
                   f"{len(set(mixed))}")  # fmt: skip
    print(json.dumps(result))


if __name__ == "__main__":
    main()
