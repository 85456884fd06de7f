"""Benchmark of the closed loop: live traffic trains the policy that serves it, against a control arm.

One embedded stack (broker, proxy, stage worker, DuckDB sink, live trainer) and two policy servers with the
same base weights: ``live`` takes the trainer's weight pushes, ``control`` never does. Two arms of agents
send the same kind of traffic (the same task, the same group size and concurrency, the same temperature)
through the same proxy for the same time budget; the checker grades every reply and posts the reward
through the reward API (a share of them late). Only the live arm's tenant is opted in to training, so
governance alone keeps the control traffic out of the train topic.

Figures (the final JSON line): ``live_reward_start`` (live replies served by the base version "0"),
``live_reward_end`` and ``control_reward_end`` (replies answered in the last ``end_window`` of the budget),
``reward_gain_vs_control`` (their ratio), ``reward_to_serving_p50_s`` (a reward posted -> a policy trained
on it serving: the median of the trainer's per-update medians), ``stale_dropped_frac``, ``samples_per_s``
(samples trained per second of traffic), and the per-version reward table read back from DuckDB. On a
multi-step task (``--task order_lookup``: a forced tool call, the tool's result, then the answer) also
``steps_per_trajectory_mean`` (model calls per live trajectory, as DuckDB recorded them) and
``merged_trajectory_frac`` (multi-step trajectories the trainer trained as one sequence).

    python -m bench.live_loop                    # the full run: SmolLM2-135M-Instruct, 30 minutes
    python -m bench.live_loop --quick            # a few minutes: the loop runs, versions increase
    python -m bench.live_loop --task order_lookup   # the multi-step task, 30 minutes
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.config import load_config
from app.up import http_ok, running_stack
from bench.smollm2_stack import live_and_control
from pipeline.demo.summary import rows, wait_until
from pipeline.learn.agents import TaskAgent
from pipeline.learn.arm import Arm
from pipeline.learn.checker import Checker, Graded
from pipeline.learn.report import plot, points_sql, steps_per_trajectory_sql, version_table_sql
from pipeline.learn.tasks import ToolTask, build_tasks
from pipeline.supervisor import ServiceSpec, sluice_argv
from sinks.clients import connect_client

LIVE_KEY, CONTROL_KEY = "sk-bench-live", "sk-bench-control"
TARGETS = {"reward_gain_vs_control": 1.3, "reward_to_serving_p50_s": 60.0}
MULTI_STEP_TARGETS = {"reward_gain_vs_control": 1.5, "steps_per_trajectory_mean": 2.0,
                      "merged_trajectory_frac": 0.9, "reward_to_serving_p50_s": 90.0}  # fmt: skip


def write_configs(tmp: Path, a: argparse.Namespace) -> tuple[Path, Path]:
    """The stack's config (live server started by the stack) and the control server's copy of it."""
    return live_and_control(
        tmp,
        keys={"live": LIVE_KEY, "control": CONTROL_KEY},
        opt_in={"live": True, "control": False},
        trainer={
            "promotion": "direct",  # this benchmark measures learning speed; bench.governed_loop gates it
            "model": a.model,
            "group_size": a.group_size,
            "max_staleness": a.max_staleness,
            "learning_rate": a.lr,
            "seed": a.seed,
        },
        live={"update_samples": a.update_samples, "lora_rank": a.lora_rank, "lora_targets": a.lora_targets,
              "default_scope": "shared"},
    )  # fmt: skip


def mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def arm_figures(graded: list[Graded], t0: float, end_from: float) -> dict[str, Any]:
    base = [g.reward for g in graded if g.attempt.policy_version == "0"]
    end = [g.reward for g in graded if g.attempt.answered_at >= end_from]
    return {
        "answers": len(graded),
        "reward_all": mean([g.reward for g in graded]),
        "reward_base_version": mean(base),
        "reward_end": mean(end),
        "answers_end": len(end),
        "answers_per_s": len(graded)
        / max(1e-9, max((g.attempt.answered_at for g in graded), default=t0) - t0),
    }


async def run_arms(
    proxy: str, a: argparse.Namespace, budget_s: float, stop: Callable[[], bool] | None = None
) -> tuple[Arm, Arm, float]:
    tasks = build_tasks([a.task])
    by_name = {t.name: t for t in tasks}
    arms = []
    for arm_name, key, model in (
        ("live", LIVE_KEY, "smollm2-live"),
        ("control", CONTROL_KEY, "smollm2-control"),
    ):
        agent = TaskAgent(proxy, key, model, tasks, temperature=a.temperature, arm=arm_name, seed=a.seed)
        checker = Checker(
            proxy, by_name, late_fraction=a.late_fraction, late_delay_s=a.late_delay_s, seed=a.seed
        )
        arms.append(
            Arm(
                agent,
                checker,
                group_size=a.group_size,
                groups_in_flight=a.groups_in_flight,
                group_by=a.group_by,
            )
        )
    t0 = time.time()
    try:
        await asyncio.gather(*(arm.run(until=t0 + budget_s, stop=stop) for arm in arms))
        await asyncio.gather(*(arm.checker.drain() for arm in arms))
    finally:
        for arm in arms:
            await arm.agent.aclose()
            await arm.checker.aclose()
    return arms[0], arms[1], t0


def trainer_metrics(out_dir: Path) -> list[dict[str, Any]]:
    path = out_dir / "metrics.jsonl"
    if not path.is_file():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def version_reached(out_dir: Path, version: int | None) -> Callable[[], bool] | None:
    """A stop test for the traffic: the trainer has published ``version`` (None: run the whole budget)."""
    if version is None:
        return None
    return lambda: any(int(m["policy_version"]) >= version for m in trainer_metrics(out_dir)[-1:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="A few minutes: checks that the loop runs.")
    ap.add_argument("--minutes", type=float, default=None, help="Traffic budget (default 28; --quick 4).")
    ap.add_argument(
        "--until-version", type=int, default=None, help="Stop the traffic once the trainer made this version."
    )
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--task", default="extraction")
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--group-size", type=int, default=4)
    ap.add_argument("--group-by", choices=["problem", "task"], default="task", help="What a task id names.")
    ap.add_argument("--groups-in-flight", type=int, default=2, help="Problems in flight per arm.")
    ap.add_argument("--update-samples", type=int, default=16)
    ap.add_argument("--max-staleness", type=int, default=3)
    ap.add_argument("--lr", type=float, default=4e-4)
    ap.add_argument("--lora-rank", type=int, default=16)
    ap.add_argument("--lora-targets", nargs="+", default=["q_proj", "v_proj"], help="Fewer: smaller pushes.")
    ap.add_argument("--late-fraction", type=float, default=0.25)
    ap.add_argument("--late-delay-s", type=float, default=20.0)
    ap.add_argument(
        "--end-window", type=float, default=0.25, help="Share of the budget the end reward covers."
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--settle-s", type=float, default=10.0, help="Wait after the traffic before reading DuckDB's figures."
    )
    ap.add_argument("--plot", type=Path, default=None, help="Write the reward plot (PNG) here.")
    ap.add_argument("--keep-dir", type=Path, default=None, help="Run in this directory and keep it.")
    a = ap.parse_args()
    budget_s = 60 * (a.minutes if a.minutes is not None else (4.0 if a.quick else 28.0))
    tmp_ctx = tempfile.TemporaryDirectory(prefix="sluice-live-loop-") if a.keep_dir is None else None
    tmp = Path(tmp_ctx.name) if tmp_ctx else a.keep_dir
    tmp.mkdir(parents=True, exist_ok=True)
    path, control_path = write_configs(tmp, a)
    cfg = load_config(path)
    ctrl_cfg = load_config(control_path)
    proxy = f"http://{cfg.proxy.host}:{cfg.proxy.port}"
    control_url = f"http://127.0.0.1:{ctrl_cfg.trainer.serve.port}"
    log = io.StringIO()
    setup_t0 = time.time()
    try:
        with running_stack(cfg, path, with_trainer=True, log_path=tmp / "logs" / "up.log", sink=log) as sup:
            sup.start(
                ServiceSpec(
                    "model-control",
                    sluice_argv(
                        "serve-model", "--port", str(ctrl_cfg.trainer.serve.port), config=control_path
                    ),
                    ready_probe=http_ok(f"{control_url}/v1/models"),
                )
            )
            setup_s = time.time() - setup_t0
            print(f"stack up in {setup_s:.0f}s; {budget_s / 60:.1f} min of traffic per arm", file=sys.stderr)
            stop = version_reached(cfg.path(cfg.trainer.output_dir), a.until_version)
            live, control, t0 = asyncio.run(run_arms(proxy, a, budget_s, stop))
            traffic_s = time.time() - t0
            time.sleep(a.settle_s)  # the last trained version reaches DuckDB's landing wait
            client = connect_client(cfg.sink_settings(), None)
            try:
                ids_done = len(live.graded) + len(control.graded)
                wait_until(
                    lambda: (
                        (rows(client, "SELECT count(*) AS n FROM trajectories WHERE rewarded")[0]["n"])
                        >= 0.95 * ids_done
                    ),
                    120,
                    "rewarded trajectories to land",
                )
                table = {arm: rows(client, version_table_sql(f"{arm}-")) for arm in ("live", "control")}
                steps_mean = rows(client, steps_per_trajectory_sql("live-"))[0]["mean"]
                points = {arm: rows(client, points_sql(f"{arm}-")) for arm in ("live", "control")}
            finally:
                client.close()
    except Exception:
        print(log.getvalue()[-6000:], file=sys.stderr)
        raise
    for arm in (live, control):  # the version DuckDB recorded, where the reply did not name one
        served = {p["trajectory_id"]: p["policy_version"] for p in points[arm.agent.arm]}
        for g in arm.graded:
            g.attempt.policy_version = g.attempt.policy_version or served.get(g.attempt.trajectory_id)
    metrics = trainer_metrics(cfg.path(cfg.trainer.output_dir))
    end_from = t0 + (1 - a.end_window) * budget_s
    lf, cf = arm_figures(live.graded, t0, end_from), arm_figures(control.graded, t0, end_from)
    r2s = [m["reward_to_serving_s_p50"] for m in metrics if m.get("reward_to_serving_s_p50") is not None]
    last = metrics[-1] if metrics else {}
    versions = sorted({int(m["policy_version"]) for m in metrics})
    steps_per_version = {str(v): sum(1 for m in metrics if m["policy_version"] == v) for v in versions}
    figures: dict[str, Any] = {
        "bench": "live_loop",
        "quick": a.quick,
        "model": a.model,
        "task": a.task,
        "budget_s": budget_s,
        "traffic_s": round(traffic_s, 1),
        "setup_s": round(setup_s, 1),
        "live_reward_start": lf["reward_base_version"],
        "live_reward_end": lf["reward_end"],
        "control_reward_start": cf["reward_base_version"],
        "control_reward_end": cf["reward_end"],
        "reward_gain_vs_control": (lf["reward_end"] / cf["reward_end"])
        if lf["reward_end"] is not None and cf["reward_end"]
        else None,
        "reward_to_serving_p50_s": statistics.median(r2s) if r2s else None,
        "stale_dropped_frac": last.get("stale_dropped_frac"),
        "steps_per_trajectory_mean": steps_mean,
        "model_calls_per_attempt_mean": mean([g.attempt.model_calls for g in live.graded]),
        "merged_trajectory_frac": last.get("merged_trajectory_frac"),
        "multi_step_trajectories": last.get("multi_step_trajectories_total"),
        "fallback_steps": last.get("fallback_steps_total"),
        "samples_per_s": last.get("samples_total", 0) / traffic_s,
        "updates": len(metrics),
        "policy_version_end": last.get("policy_version"),
        "steps_per_version": steps_per_version,
        "live": lf,
        "control": cf,
        "agent_failures": {"live": len(live.failures), "control": len(control.failures)},
        "reward_by_version_duckdb": {
            arm: {str(r["policy_version"]): [r["answers"], r["mean_reward"]] for r in t}
            for arm, t in table.items()
        },
        "settings": {k: v for k, v in vars(a).items() if k not in ("plot", "keep_dir")},
        "targets": MULTI_STEP_TARGETS if isinstance(build_tasks([a.task])[0], ToolTask) else TARGETS,
    }
    if a.plot is not None:
        plot(points, a.plot, title=f"{a.model}, task {a.task}: live training vs control (same traffic)")
        figures["plot"] = str(a.plot)
    if tmp_ctx is not None:
        tmp_ctx.cleanup()
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
