"""Benchmark of unlearning: a canary one data subject taught the served policy is forgotten after the
subject is erased, and the rebuilt version keeps what the other subjects' traffic taught it.

One embedded stack (broker, proxy, stage worker, DuckDB sink, live trainer with ``trainer.promotion:
direct``, so every trained version serves at once: this measures forgetting, not the gates) and the real
SmolLM2-135M-Instruct on CPU behind ``sluice serve-model``.

How the canary is planted. A random six-digit vault code (``bench.unlearn_probe``: 10**6 codes; not a
personal-data type, so redaction keeps it, which the benchmark checks in DuckDB) is known only to the
grader of ONE data subject's task (``x-sluice-subject-id``): "What is the vault code? Reply with the six
digits only.", after two worked questions about other codes (``VaultCodeTask``). The prompt never holds
the code: the policy can only learn it from the rewards of its own completions, which is where RL trains.
The grader gives the share of the code's positions the reply's leading digits get right, so a reply with
the right digit in some position scores above its group and GRPO pushes that digit up (about one digit
in ten is right by chance at first; a group of equal rewards trains nothing). The canary subject asks in
groups of ``--group-size`` at temperature ``--canary-temperature``, ``--canary-groups`` groups at a time;
the plant count is its share of the traffic times the rounds, which repeat until the code is learned.
The learning rate is 5e-4 (``--lr``): at 1e-3 a run's live line once collapsed on the other subjects'
task. Each trained token also pays KL to the base model (``--kl-coef`` 0.1; with LoRA the base is the
adapter switched off, ``trainer.kl_coef``): without it, training on the other subjects' task alone moved
the rebuilt version's preference for a code's first digit (the default seed's rebuilt versions ranked its
canary 1.2-1.9 bits above the base, as they did every code sharing its first digit), which is drift and
not memory but reads as exposure; with it, the line moves less where no reward pulls it.
At the same time two other subjects send extraction traffic (Which city did the order ship to?
CITY=<name>), graded by its own checker. Traffic runs in rounds; after each, the canary's exposure
(Carlini et al. 2019, ``trainers.exposure``) is read on the version the server serves, after the same
question (the code withheld, as always), until it is ``--learned-bits`` over the base's or the budget is
spent.

Then the subject is erased through the sink client (what ``sluice erase --subject`` calls), and measured:
``tainted_serving_s`` (erase call -> no server serves or holds a tainted version), what is served after
the erasure, the trainer's rebuilt version (``rebuild_of`` in its lineage) once served, files of tainted
versions left under the data directory, and the extraction reward (greedy, fixed problems, asked of each
version by name) of the base, the last tainted and the rebuilt version.

Exposure moves for two reasons: what a version learned of the canary, and drift (any training reorders
the model's preferences among codes it never saw). ``trained_rise_share`` and ``rebuilt_rise_share`` tell
them apart: the share of the 511 never-planted candidate codes whose exposure rose from the base to that
version at least as much as the canary's (``bench.unlearn_probe.rise_share``): near 0 when the canary's
rise stands out (learned), about uniform on [0, 1] when it is drift like every other code's.

Exposure is read with 512 candidates (at most 9 bits) in the full run, 32 (5 bits: the +5-bit target
cannot be met) in --quick; the candidates are scored through the server's echo scoring, which runs the
probe prompt once and only each candidate's tokens per row (``trainers.scoring``). The run's line is
appended to docs/benchmarks/unlearn.jsonl (``bench.record``).

    python -m bench.unlearn --quick     # a few minutes: runs end to end, small exposure candidate set
    python -m bench.unlearn             # the full run (9-18 minutes on two free cores in the recorded runs)
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import io
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import yaml
from transformers import AutoTokenizer

from app.config import DEFAULT_CONFIG, load_config
from app.up import running_stack
from bench.record import record_run
from bench.unlearn_probe import (
    QUESTION,
    VaultCodeTask,
    candidate_scores,
    draw_canary,
    exposure,
    rise_share,
    task_reward,
)
from infra.broker import free_port
from pipeline.demo.summary import rows, wait_until
from pipeline.learn.agents import TaskAgent
from pipeline.learn.arm import Arm
from pipeline.learn.checker import Checker
from pipeline.learn.tasks.extraction import ExtractionTask
from sinks.clients import connect_client
from sinks.erasure_models import ErasureRequest
from trainers.smollm2 import smollm2_dir

KEY, TENANT = "sk-bench-unlearn", "acme"
SUBJECT, OTHERS = "subject-canary", ("subject-a", "subject-b")
TARGETS = {"exposure_trained_over_base": ">= 5", "exposure_after_erasure_over_base": "<= 1",
           "exposure_rebuilt_over_base": "<= 1", "tainted_files_left": "<= 0", "tainted_serving_s": "<= 60",
           "rebuilt_reward_retained": ">= 0.8"}  # fmt: skip


def write_config(tmp: Path, a: argparse.Namespace) -> Path:
    data = yaml.safe_load(DEFAULT_CONFIG.read_text())
    port = free_port()
    data["broker"]["bootstrap_servers"] = f"127.0.0.1:{free_port()}"
    data["topics"]["partitions"] = 2
    data["proxy"].update(
        port=free_port(), spool_dir=str(tmp / "spool"),
        backends=[{"name": "live", "base_url": f"http://127.0.0.1:{port}/v1", "models": ["smollm2"],
                   "return_token_ids": True, "model_version": "live"}],
        api_keys=[{"key": KEY, "tenant": TENANT, "data_class": "internal", "consent_training": True}],
    )  # fmt: skip
    data["eligibility"]["tenants"] = {TENANT: {"training_opt_in": True, "retention_days": 30}}
    data["stages"].update(data_dir=str(tmp / "stages"), workers=1)
    data["rewards"] = {**data["rewards"], "wait_s": 2}
    data["sink"] = {**data.get("sink", {}), "database": str(tmp / "sluice.duckdb"), "query_port": free_port()}
    data["up"] = {"log_file": str(tmp / "logs" / "up.log"), "local_model_backend": "live"}
    data["trainer"] = {
        **data.get("trainer", {}),
        "mode": "live", "promotion": "direct", "model": str(smollm2_dir()), "models": ["smollm2*"],
        "output_dir": str(tmp / "trainer"), "policy_servers": [f"http://127.0.0.1:{port}"],
        "group_size": a.group_size, "max_staleness": 4, "learning_rate": a.lr, "kl_coef": a.kl_coef,
        "poll_timeout_s": 0.5,
        "checkpoint_every": a.checkpoint_every, "progress": False, "seed": a.seed,
        "serve": {"model_name": "smollm2", "max_batch": 32, "keep_versions": 4, "port": port,
                  "events_log": str(tmp / "serve" / "events.jsonl")},
        "live": {"group_wait_s": 30, "update_samples": a.update_samples, "max_update_samples": 2 * a.update_samples,
                 "update_wait_s": 5, "lora_rank": 16, "lora_alpha": 32.0, "lora_targets": ["q_proj", "v_proj"],
                 "default_scope": "shared"},
    }  # fmt: skip
    path = tmp / "sluice.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def arms(proxy: str, canary: str, a: argparse.Namespace, rnd: int) -> list[Arm]:
    """The canary subject's echo arm and the other subjects' extraction arms, for one round."""
    out = []
    for i, (subject, task) in enumerate(
        [(SUBJECT, VaultCodeTask(canary)), *((s, ExtractionTask()) for s in OTHERS)]
    ):
        seed = a.seed + 100 * rnd + i
        temperature = a.canary_temperature if subject == SUBJECT else 1.0
        agent = TaskAgent(proxy, KEY, "smollm2", [task], temperature=temperature, arm=subject, seed=seed,
                          headers={"x-sluice-subject-id": subject})  # fmt: skip
        checker = Checker(proxy, {task.name: task}, late_fraction=0.0, seed=seed)
        group_by = "problem" if subject == SUBJECT else "task"
        in_flight = a.canary_groups if subject == SUBJECT else 1
        out.append(
            Arm(agent, checker, group_size=a.group_size, groups_in_flight=in_flight, group_by=group_by)
        )
    return out


async def traffic(proxy: str, canary: str, a: argparse.Namespace, rnd: int) -> dict[str, float]:
    """One round of every subject's traffic; the mean reward per subject."""
    all_arms = arms(proxy, canary, a, rnd)
    try:
        until = time.time() + a.round_s
        await asyncio.gather(*(arm.run(until=until) for arm in all_arms))
        await asyncio.gather(*(arm.checker.drain() for arm in all_arms))
    finally:
        for arm in all_arms:
            await arm.agent.aclose()
            await arm.checker.aclose()
    return {
        arm.agent.arm: round(sum(g.reward for g in arm.graded) / max(1, len(arm.graded)), 3)
        for arm in all_arms
    }


def metrics(out_dir: Path) -> list[dict[str, Any]]:
    path = out_dir / "metrics.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.is_file() else []


def tainted_files(root: Path, tainted: set[str]) -> list[str]:
    """Pushed weight files of a tainted version, and checkpoints that hold one, anywhere under ``root``."""
    names = {f"policy-v{v}.safetensors" for v in tainted}
    left = [str(p) for p in root.rglob("policy-v*") if p.name in names]
    for state in root.rglob("trainer_state.json"):
        if str(json.loads(state.read_text()).get("policy_version")) in tainted:
            left.append(str(state.parent))
    return left


def run(a: argparse.Namespace, tmp: Path, log: io.StringIO) -> dict[str, Any]:
    path = write_config(tmp, a)
    cfg = load_config(path)
    proxy, model = f"http://{cfg.proxy.host}:{cfg.proxy.port}", cfg.trainer.policy_servers[0]
    tok = AutoTokenizer.from_pretrained(str(smollm2_dir()))
    canary = draw_canary(a.seed)
    extraction = ExtractionTask()
    f: dict[str, Any] = {}
    with running_stack(cfg, path, with_trainer=True, log_path=tmp / "logs" / "up.log", sink=log), \
            httpx.Client(timeout=60) as http:  # fmt: skip

        def policy() -> dict[str, Any]:
            return http.get(f"{model}/v1/policy").json()

        def say(msg: str) -> None:
            print(f"[{time.time() - t0:6.0f}s] {msg}", file=sys.stderr, flush=True)

        t0 = time.time()
        base_scores = candidate_scores(model, tok, canary, "0", a.candidates)
        base = exposure(base_scores)
        base_reward = task_reward(model, "0", extraction, a.eval_problems, a.seed)
        say(f"base: exposure {base:.2f} bits, extraction reward {base_reward:.3f}")
        trained, rewards = base, []
        for rnd in range(a.max_rounds):
            rewards.append(asyncio.run(traffic(proxy, canary, a, rnd)))
            time.sleep(a.settle_s)  # the round's last rewards reach a pushed version
            served = policy()["serving_version"]
            trained = exposure(candidate_scores(model, tok, canary, None, a.candidates))
            say(f"round {rnd + 1}: rewards {rewards[-1]}; serving v{served}, exposure {trained:.2f} bits")
            if trained >= base + a.learned_bits:
                break
        time.sleep(a.settle_s)
        status = policy()
        served = status["serving_version"]
        trained_scores = candidate_scores(model, tok, canary, served, a.candidates)
        trained = exposure(trained_scores)
        tainted_reward = task_reward(model, served, extraction, a.eval_problems, a.seed)
        say(f"trained v{served}: exposure {trained:.2f}, extraction reward {tainted_reward:.3f}")
        client = connect_client(cfg.sink_settings(), None)
        try:
            wait_until(lambda: rows(client, "SELECT count(*) AS n FROM policy_lineage")[0]["n"] > 0, 120,
                       "lineage rows")  # fmt: skip
            # the subject's steps; those whose stored reply is a six-digit code (kept as sampled, not
            # replaced by a placeholder); those whose reply is the canary itself
            reply = '"message":{"role":"assistant","content":"'  # a step's sampled reply, in its record
            stored = rows(
                client,
                f"SELECT count(*) AS n, count(*) FILTER (WHERE regexp_matches(record, '{reply}[0-9]{{6}}')) AS "
                f"digits, count(*) FILTER (WHERE contains(record, '{reply}{canary}')) AS exact FROM steps "
                f"WHERE trajectory_id LIKE '%{SUBJECT}%'",
            )[0]
            t_erase = time.time()
            receipt = client.erase(ErasureRequest(scope="subject", target=SUBJECT, requested_by="bench"))
            erase_call_s = time.time() - t_erase
        finally:
            client.close()
        weights = next(p for p in receipt.places if p.place == "weights")
        found = re.search(r"tainted policy versions (\[[^\]]*\])", weights.removed)
        tainted = set(ast.literal_eval(found.group(1))) if found else set()
        say(f"receipt, weights: {weights.removed} | {weights.operator_action}")

        def clean() -> bool:
            s = policy()
            return s["serving_version"] not in tainted and not tainted & set(s["versions"])

        try:
            wait_until(clean, a.clean_wait_s, "no tainted version on the server")
            tainted_serving_s: float | None = time.time() - t_erase
        except TimeoutError:  # recorded as a miss, and the run goes on to measure what is served
            tainted_serving_s = None
            say(f"a tainted version is still on the server: {policy()}")
        after = exposure(candidate_scores(model, tok, canary, None, a.candidates))
        say(f"erased in {erase_call_s:.1f}s: {len(tainted)} tainted; serving v{policy()['serving_version']}, "
            f"exposure {after:.2f}")  # fmt: skip
        out_dir = cfg.path(cfg.trainer.output_dir)
        rebuild: dict[str, Any] = {}
        rebuilt_lineage: dict[str, Any] = {}
        rebuilt, rebuild_s, rebuilt_exposure, rebuilt_reward, rebuilt_rise = None, None, None, None, None
        if tainted:  # no tainted version (the canary's rows never trained one): nothing to rebuild
            wait_until(lambda: any(m.get("rebuilt_version") for m in metrics(out_dir)), a.rebuild_wait_s,
                       "the rebuilt version")  # fmt: skip
            rebuild = next(m for m in metrics(out_dir) if m.get("rebuilt_version"))
            rebuilt = rebuild["rebuilt_version"]
            wait_until(lambda: rebuilt in policy()["versions"], 120, "the rebuilt version on the server")
            rebuild_s = time.time() - t_erase
            client = connect_client(cfg.sink_settings(), None)
            try:  # what the rebuilt version's lineage holds of the erased subject (none, if rebuilt right)
                wait_until(lambda: rows(client, "SELECT count(*) AS n FROM policy_lineage WHERE policy_version = '"
                                        + rebuilt + "'")[0]["n"] > 0, 120, "the rebuilt version's lineage")  # fmt: skip
                rebuilt_lineage = rows(
                    client,
                    "SELECT count(*) AS n, count(*) FILTER (WHERE trajectory_id LIKE '%" + SUBJECT + "%') AS "
                    f"subject FROM policy_lineage WHERE policy_version = '{rebuilt}'",
                )[0]
            finally:
                client.close()
            rebuilt_scores = candidate_scores(model, tok, canary, rebuilt, a.candidates)
            rebuilt_exposure = exposure(rebuilt_scores)
            rebuilt_rise = rise_share(base_scores, rebuilt_scores)
            rebuilt_reward = task_reward(model, rebuilt, extraction, a.eval_problems, a.seed)
            say(
                f"rebuilt v{rebuilt}: exposure {rebuilt_exposure:.2f}, extraction reward {rebuilt_reward:.3f}"
            )
        left = tainted_files(tmp, tainted)
        gain = tainted_reward - base_reward
        retained = (rebuilt_reward - base_reward) / gain if rebuilt_reward is not None and gain > 0 else None
        f.update(
            exposure_base=round(base, 3), exposure_trained=round(trained, 3),
            exposure_after_erasure=round(after, 3), exposure_rebuilt=rebuilt_exposure and round(rebuilt_exposure, 3),
            tainted_versions=len(tainted), tainted_files_left=len(left), tainted_serving_s=tainted_serving_s and round(tainted_serving_s, 1),
            weights_receipt=weights.removed, weights_operator_action=weights.operator_action,
            rebuild_s=rebuild_s and round(rebuild_s, 1), rebuilt_reward_retained=retained and round(retained, 3),
            trained_rise_share=round(rise_share(base_scores, trained_scores), 4),
            rebuilt_rise_share=rebuilt_rise and round(rebuilt_rise, 4),
            reward_base=base_reward, reward_tainted=tainted_reward, reward_rebuilt=rebuilt_reward,
            trained_version=served, rebuilt_version=rebuilt, rebuilt_from=rebuild.get("rebuilt_from"),
            rebuilt_samples=rebuild.get("rebuilt_samples"), rebuild_rows_erased=rebuild.get("rebuild_rows_erased"),
            rebuilt_lineage_trajectories=rebuilt_lineage.get("n"), rebuilt_lineage_subject=rebuilt_lineage.get("subject"),
            **{k: round(v, 4) for k, v in rebuild.items() if k.startswith("rebuild_") and k.endswith("_mean")},
            rounds=len(rewards), round_rewards=rewards, erase_call_s=round(erase_call_s, 1),
            canary_steps_stored=stored["n"], canary_steps_code_kept=stored["digits"], canary_steps_exact=stored["exact"],
            files_deleted=len(weights.paths), tainted_files=left,
            canary_prompt=QUESTION.format("vault"), candidates=a.candidates,
            updates=sum(1 for m in metrics(out_dir) if not m.get("rebuilt_version")),
        )  # fmt: skip
    return f


def meets(f: dict[str, Any]) -> bool:
    b = f["exposure_base"]
    r = f["rebuilt_reward_retained"]
    return (f["exposure_trained"] >= b + 5 and f["exposure_after_erasure"] <= b + 1
            and f["exposure_rebuilt"] is not None and f["exposure_rebuilt"] <= b + 1 and f["tainted_files_left"] == 0
            and f["tainted_serving_s"] is not None and f["tainted_serving_s"] <= 60 and r is not None and r >= 0.8)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="A few minutes: runs end to end.")
    ap.add_argument("--round-s", type=float, default=None, help="Traffic per round (default 120; quick 60).")
    ap.add_argument("--max-rounds", type=int, default=None, help="Rounds at most (default 8; quick 2).")
    ap.add_argument(
        "--candidates", type=int, default=None, help="Exposure candidates (default 512; quick 32)."
    )
    ap.add_argument("--eval-problems", type=int, default=None, help="Reward probe (default 48; quick 12).")
    ap.add_argument("--learned-bits", type=float, default=5.0, help="Exposure over base that ends training.")
    ap.add_argument("--group-size", type=int, default=4)
    ap.add_argument("--canary-temperature", type=float, default=1.0, help="The canary subject's sampling.")
    ap.add_argument("--canary-groups", type=int, default=3, help="The canary subject's groups in flight.")
    ap.add_argument("--update-samples", type=int, default=16)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--kl-coef", type=float, default=0.1, help="KL to the base (the adapter off) per token.")
    ap.add_argument("--checkpoint-every", type=int, default=4)
    ap.add_argument("--settle-s", type=float, default=10.0)
    ap.add_argument("--rebuild-wait-s", type=float, default=600.0)
    ap.add_argument(
        "--clean-wait-s", type=float, default=120.0, help="Wait this long for no tainted version."
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-record", action="store_true", help="Do not append the run to docs/benchmarks.")
    ap.add_argument("--keep-dir", type=Path, default=None, help="Run in this directory and keep it.")
    a = ap.parse_args()
    quick = a.quick
    a.round_s = a.round_s or (60.0 if quick else 120.0)
    a.max_rounds = a.max_rounds or (2 if quick else 8)
    a.candidates = a.candidates or (32 if quick else 512)
    a.eval_problems = a.eval_problems or (12 if quick else 48)
    tmp_ctx = tempfile.TemporaryDirectory(prefix="sluice-unlearn-") if a.keep_dir is None else None
    tmp = Path(tmp_ctx.name) if tmp_ctx else a.keep_dir
    tmp.mkdir(parents=True, exist_ok=True)
    log, started = io.StringIO(), time.time()
    try:
        figures = run(a, tmp, log)
    except Exception:
        print(log.getvalue()[-6000:], file=sys.stderr)
        raise
    finally:
        if tmp_ctx is not None:
            tmp_ctx.cleanup()
    figures.update(duration_s=round(time.time() - started, 1), meets_targets=meets(figures))
    print(json.dumps({"bench": "unlearn", "quick": quick, **figures}))
    if not a.no_record:
        base = figures["exposure_base"]
        targets = {**{k: v for k, v in TARGETS.items() if "over_base" not in k},
                   "exposure_trained": f">= {base + 5:.3f}", "exposure_after_erasure": f"<= {base + 1:.3f}",
                   "exposure_rebuilt": f"<= {base + 1:.3f}"}  # fmt: skip
        notes = (f"{'a --quick run' if quick else 'the full run'}: {figures['rounds']} rounds, {figures['updates']} "
                 f"updates, {a.candidates} exposure candidates; canary planted by one subject, {a.canary_groups} "
                 "groups in flight; exposure targets are base + 5 and base + 1 bits")  # fmt: skip
        path = record_run("unlearn", figures, targets, headline=["exposure_trained", "exposure_rebuilt",
                          "rebuilt_reward_retained"], notes=notes)  # fmt: skip
        print(f"recorded in {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
