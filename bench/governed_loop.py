"""Benchmark of governed live learning: trained weights serve only once the control plane's gates prove them,
on the real SmolLM2-135M-Instruct on CPU.

One stack (broker, proxy, stage worker, DuckDB sink, ``sluice train`` in live mode with
``trainer.promotion: gated``, one ``serve-model`` holding the default and every candidate at once) and three
tenants sending the same traffic (the ``extraction`` task: reply ``CITY=<name>`` for a shipping record;
SmolLM2 gets about half right at temperature 1):

* ``gated``: opted in, learning scope ``own``; the rewards it posts come from the task's true checker;
* ``control``: not opted in (and scope ``none``): never trains, always served the base version;
* ``gamed``: opted in, scope ``own``; the rewards it posts come from a gamed grader (source
  ``gamed-grader``) that pays for any reply naming Lisbon, whatever the record says (the city SmolLM2
  already names most often: about one reply in six, so its groups carry a signal). A model trained on it
  learns to answer Lisbon, which the true checker scores 0 on nine records in ten.

The trainer publishes each scope's versions as candidates with their lineage in the ledger. The control
plane runs in this process every ``--interval`` seconds (``open_runner`` + ``run_pass``), with the task's
true checker as its grader (``evolve.graders``: a ``TaskConfig`` of kind ``learn``, which reads the answer
back from the recorded prompt): per scope it gates the newest candidate (replay, shadow, offline), then a
canary the proxy routes by the scope's assignment, read by the grader, not by the posted rewards; it
promotes or rolls back. So the gamed tenant's candidates may be trained, but never serve beyond a canary.

Figures (the final JSON line; a full run is also appended to docs/benchmarks/governed_loop.jsonl): the true
reward per tenant at the start and end of the budget and ``reward_gain_vs_control`` (gated / control over the
last ``--end-window`` of it); candidate outcomes (``weight_promoted``, ``weight_rolled_back``, gate counts);
``harmful_candidates`` (the gamed scope's proposals, their lineage names the gamed source) and how many were
promoted; ``ungated_served`` (live steps in DuckDB answered by a version before its canary started, read
against the ledger); ``reward_to_promoted_p50_s`` (a reward posted -> the first promotion of a version
trained on it); ``serving_rss_mb_per_extra_version`` (the serve-model process's RSS against the count of
versions it held, least squares).

Departures from the ideal: one machine runs everything, so the policy server, the learner and the gates'
evaluations share two CPU cores and traffic is a few answers a second; the canary is decided by an
anytime-valid sequential test, which on this traffic needs tens of answers per arm, so a budget of 30
minutes fits a handful of canaries; a tenant's own promoted version is served by its assignment (the
server's default stays the base); the gamed grader is a stand-in for a reward source that can be gamed.

    python -m bench.governed_loop                 # the full run: 30 minutes of traffic
    python -m bench.governed_loop --quick         # 6 minutes: every part runs, candidates reach the gates
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import statistics
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from app.config import load_config
from app.up import running_stack
from bench.governed_figures import (
    Answer,
    candidate_figures,
    p50,
    reward_to_promoted,
    reward_windows,
    rss_per_extra_version,
    ungated_served,
    weights_states,
)
from bench.record import commit, record_run
from bench.smollm2_stack import policy_backend, smollm2_stack, write_yaml
from infra.broker import free_port
from pipeline.demo.summary import rows, wait_until
from pipeline.evolve.ledger_state import proposal_states, read_ledger
from pipeline.evolve.wiring import open_runner
from pipeline.learn.agents import TaskAgent
from pipeline.learn.arm import Arm
from pipeline.learn.checker import Checker
from pipeline.learn.tasks import ExtractionTask, Problem
from sinks.clients import connect_client
from sluice.events import scoped_trajectory_id

GAMED_SOURCE = "gamed-grader"
TENANTS = {"gated": "sk-bench-gated", "control": "sk-bench-control", "gamed": "sk-bench-gamed"}
HEADLINE = ["reward_gain_vs_control", "harmful_promoted", "ungated_served"]
TARGETS = {
    "reward_gain_vs_control": ">= 1.5",
    "harmful_candidates": ">= 1",
    "harmful_promoted": "<= 0",
    "weight_promoted": ">= 2",
    "ungated_served": "<= 0",
    "reward_to_promoted_p50_s": "<= 300",
}


class GamedExtraction(ExtractionTask):
    """The gamed grader: pays for a reply naming one fixed city, whatever the record says."""

    def grade(self, problem: Problem, reply: str) -> float:
        return 1.0 if "Lisbon" in reply else 0.0


def write_config(tmp: Path, a: argparse.Namespace) -> Path:
    data = smollm2_stack(
        tmp,
        backends=[policy_backend("policy", free_port(), ["smollm2*"])],
        keys=TENANTS,
        opt_in={"gated": True, "gamed": True, "control": False},
        trainer={
            "promotion": "gated",
            "model": a.model,
            "models": ["smollm2*"],
            "group_size": 4,
            # gated: a tenant is served its promoted version while its line trains on, so every row is as many
            # versions behind as the line has gone since the last promotion; the decoupled loss (behaviour
            # weight cap, IcePop mask) bounds the off-policy step instead of dropping all of them
            "max_staleness": 64,
            "learning_rate": a.lr,
            "seed": a.seed,
        },
        # the default and up to ~6 candidates of two scopes at once; each costs its merged q/v matrices
        serve={"max_versions": 12},
        live={
            "update_samples": 16,
            # rank 8 on q/v: small pushes and snapshots per scope, enough for a format-and-copy task
            "lora_rank": a.lora_rank, "lora_targets": ["q_proj", "v_proj"],
            # a candidate every few updates: each one a real step beyond its parent, so the gates spend
            # their scarce traffic on versions that can differ, not on one update's noise
            "push_every": a.push_every,
            "default_scope": "own", "scopes": {"control": "none"},
        },
    )  # fmt: skip
    grader = {"kind": "learn", "learn_task": "extraction"}  # the TRUE checker, never the posted rewards
    data["evolve"] = {
        "enabled": False,  # the passes run in this process, on the benchmark's schedule
        "graders": {"extraction": grader, "*": grader},
        # the server decodes one version's batch at a time, to its end: sixteen requests at once share a
        # batch instead of each waiting behind a traffic batch (a gating pass: ~40 answers, 1-4 minutes)
        "eval": {"backend": "policy", "max_tokens": 8, "concurrency": 16, "timeout_s": 300},
        # a handful of greedy replays per arm: the gates' cost comes out of the same two cores as traffic
        "shadow": {"max_prompts": 8, "min_prompts": 4},
        "offline": {"held_out": 8, "probe_samples": 1, "probe_max_tokens": 16},
        "canary": {
            "share": 0.5,  # both arms fill at the same rate: the fastest decision for a given traffic
            "weights_reward": "grader",
            # anytime-valid: no decision under 15 answers per arm; a 0.3-0.4 gain decides at ~50-70 per
            # arm (alpha 0.2); at 40 per arm (1-3 minutes of gated traffic) a candidate not worse than the
            # serving version by 0.05 is promoted (evolve.canary.weights_non_inferiority), else aborted
            "test": {"min_per_arm": 15, "tune_n": 40, "alpha": 0.2, "max_per_arm": 40},
        },
        # one canary per own scope at once; the next candidate may go at once after a rollback
        "limits": {"max_canaries": 2, "min_evidence": 4, "cooldown_after_rollback_s": 0,
                   "weights_min_interval_s": 0},
    }  # fmt: skip
    return write_yaml(data, tmp / "sluice.yaml")


class ControlPlane(threading.Thread):
    """The control plane's passes on a short interval, in this process; each pass's actions are kept."""

    def __init__(self, settings: Any, interval_s: float) -> None:
        super().__init__(name="control-plane", daemon=True)
        self.settings, self.interval_s = settings, interval_s
        self.halt = threading.Event()
        self.actions: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.passes = 0
        self.pass_s: list[float] = []

    def run(self) -> None:
        with open_runner(self.settings, actor="bench-governed") as runner:
            while not self.halt.wait(self.interval_s):
                began = time.time()
                try:
                    report = runner.run_pass()
                except Exception as err:  # a failed pass is reported; the next one tries again
                    self.errors.append(f"{type(err).__name__}: {err}")
                    print(f"control plane: pass failed: {self.errors[-1][:300]}", file=sys.stderr)
                    continue
                self.passes += 1
                now = time.time()
                self.pass_s.append(now - began)
                for act in report.actions:
                    if act.what != "wait":
                        self.actions.append({"at": now, "what": act.what, "detail": act.detail[:160]})
                        print(f"control plane: {act.what} {act.detail[:120]}", file=sys.stderr)


class MemorySampler(threading.Thread):
    """Every few seconds: the serve-model process's RSS and the count of versions it holds."""

    def __init__(self, pid: int, server: str, every_s: float = 5.0) -> None:
        super().__init__(name="memory", daemon=True)
        self.pid, self.server, self.every_s = pid, server, every_s
        self.halt = threading.Event()
        self.samples: list[tuple[int, float]] = []
        self.added_mb: dict[str, float] = {}

    def run(self) -> None:
        with httpx.Client(timeout=5) as http:
            while not self.halt.wait(self.every_s):
                try:
                    status = http.get(f"{self.server}/v1/policy").json()
                    rss = next(int(x.split()[1]) / 1024 for x in Path(f"/proc/{self.pid}/status").read_text()
                               .splitlines() if x.startswith("VmRSS:"))  # fmt: skip
                except (httpx.HTTPError, OSError, ValueError, StopIteration):
                    continue
                self.samples.append((len(status["versions"]), rss))
                for v in status.get("kept", []):
                    self.added_mb[v["version"]] = v.get("added_bytes", 0) / 2**20


async def run_tenants(proxy: str, a: argparse.Namespace, budget_s: float) -> tuple[dict[str, Arm], float]:
    true_task, gamed_task = ExtractionTask(), GamedExtraction()
    arms: dict[str, Arm] = {}
    for tenant, key in TENANTS.items():
        agent = TaskAgent(proxy, key, "smollm2", [true_task], temperature=1.0, arm=tenant, seed=a.seed)
        gamed = tenant == "gamed"
        checker = Checker(proxy, {"extraction": gamed_task if gamed else true_task}, late_fraction=0.25,
                          late_delay_s=20.0, seed=a.seed, source=GAMED_SOURCE if gamed else None)  # fmt: skip
        in_flight = a.gated_in_flight if tenant == "gated" else a.other_in_flight
        arms[tenant] = Arm(agent, checker, group_size=4, groups_in_flight=in_flight, group_by="task")
    t0 = time.time()
    try:
        await asyncio.gather(*(arm.run(until=t0 + budget_s) for arm in arms.values()))
        await asyncio.gather(*(arm.checker.drain() for arm in arms.values()))
    finally:
        for arm in arms.values():
            await arm.agent.aclose()
            await arm.checker.aclose()
    return arms, t0


def answers_of(arms: dict[str, Arm], steps: list[dict[str, Any]]) -> list[Answer]:
    """Each live reply with the version DuckDB recorded for its step and its true checker's grade."""
    recorded = {r["trajectory_id"]: r for r in steps}
    true_task = ExtractionTask()
    out = []
    for tenant, arm in arms.items():
        for g in arm.graded:
            tid = scoped_trajectory_id(tenant, g.attempt.trajectory_id)
            step = recorded.get(tid) or {}
            out.append(
                Answer(tenant=tenant, trajectory_id=tid,
                       version=step.get("model_version") or g.attempt.policy_version,
                       answered_at=float(step.get("at_s") or g.attempt.answered_at),
                       true_reward=true_task.grade(g.attempt.problem, g.attempt.reply), posted_at=g.posted_at)
            )  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="6 minutes: checks that every part runs.")
    ap.add_argument("--minutes", type=float, default=None, help="Traffic budget (default 30; --quick 6).")
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--interval", type=float, default=20.0, help="Seconds between control-plane passes.")
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--lora-rank", type=int, default=8)
    ap.add_argument("--push-every", type=int, default=2, help="Updates per published candidate.")
    ap.add_argument("--gated-in-flight", type=int, default=3, help="Groups of 4 in flight for gated.")
    ap.add_argument("--other-in-flight", type=int, default=1, help="Groups in flight for control, gamed.")
    ap.add_argument(
        "--end-window", type=float, default=0.25, help="Share of the budget the end reward covers."
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep-dir", type=Path, default=None, help="Run in this directory and keep it.")
    ap.add_argument("--no-save", action="store_true", help="Print only (a --quick run is never recorded).")
    a = ap.parse_args()
    minutes = a.minutes if a.minutes is not None else (6.0 if a.quick else 30.0)
    budget_s = 60 * minutes
    tmp_ctx = tempfile.TemporaryDirectory(prefix="sluice-governed-") if a.keep_dir is None else None
    tmp = Path(tmp_ctx.name) if tmp_ctx else a.keep_dir
    tmp.mkdir(parents=True, exist_ok=True)
    path = write_config(tmp, a)
    cfg = load_config(path)
    proxy = f"http://{cfg.proxy.host}:{cfg.proxy.port}"
    server = cfg.trainer.policy_servers[0]
    log = io.StringIO()
    setup_t0 = time.time()
    try:
        with running_stack(cfg, path, with_trainer=True, log_path=tmp / "logs" / "up.log", sink=log) as sup:
            setup_s = time.time() - setup_t0
            print(f"stack up in {setup_s:.0f}s; {minutes:g} min of traffic", file=sys.stderr)
            plane = ControlPlane(cfg.evolve_settings(), a.interval)
            memory = MemorySampler(sup.pid("model"), server)
            plane.start()
            memory.start()
            try:
                arms, t0 = asyncio.run(run_tenants(proxy, a, budget_s))
                traffic_s = time.time() - t0
            finally:
                plane.halt.set()
                memory.halt.set()
                plane.join(timeout=600)
                memory.join(timeout=30)
            client = connect_client(cfg.sink_settings(), None)
            try:
                done = sum(len(arm.graded) for arm in arms.values())
                wait_until(
                    lambda: (
                        rows(client, "SELECT count(*) AS n FROM trajectories WHERE rewarded")[0]["n"]
                        >= 0.95 * done
                    ),
                    120,
                    "rewarded trajectories to land",
                )
                names = ", ".join(f"'{t}'" for t in TENANTS)
                steps = rows(
                    client,
                    "SELECT trajectory_id, any_value(model_version) AS model_version, "
                    f"min(epoch(created_at)) AS at_s FROM steps WHERE tenant IN ({names}) GROUP BY trajectory_id",
                )
            finally:
                client.close()
            states = weights_states(proposal_states(read_ledger(cfg.broker, cfg.topics, 30)).values())
    except Exception:
        print(log.getvalue()[-6000:], file=sys.stderr)
        raise
    answers = answers_of(arms, steps)
    tenants = reward_windows(answers, t0, budget_s, a.end_window)
    outcomes = candidate_figures(states, GAMED_SOURCE)
    ungated, ungated_by_version = ungated_served(answers, states)
    latencies = reward_to_promoted(answers, states)
    end = {t: tenants.get(t, {}).get("reward_end") for t in TENANTS}
    gain = end["gated"] / end["control"] if end["gated"] is not None and end["control"] else None
    figures: dict[str, Any] = {
        "bench": "governed_loop",
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": commit(),
        "command": "python -m bench.governed_loop " + " ".join(sys.argv[1:]),
        "minutes": minutes,
        "quick": a.quick,
        "model": a.model,
        "task": "extraction",
        "reward_gain_vs_control": gain,
        "harmful_candidates": outcomes["harmful_candidates"],
        "harmful_promoted": outcomes["harmful_promoted"],
        "weight_promoted": outcomes["weight_promoted"],
        "weight_rolled_back": outcomes["weight_rolled_back"],
        "ungated_served": ungated,
        "reward_to_promoted_p50_s": p50(latencies),
        "serving_rss_mb_per_extra_version": rss_per_extra_version(memory.samples),
        "tenants": tenants,
        "candidates": outcomes,
        "ungated_by_version": ungated_by_version,
        "rewards_promoted": len(latencies),
        "serving_versions_held_max": max((n for n, _ in memory.samples), default=None),
        "serving_rss_mb": [
            min((m for _, m in memory.samples), default=None),
            max((m for _, m in memory.samples), default=None),
        ],  # fmt: skip
        "serving_added_mb_per_version": statistics.fmean(v for v in memory.added_mb.values() if v > 0)
        if any(v > 0 for v in memory.added_mb.values())
        else None,
        "control_plane": {
            "passes": plane.passes,
            "errors": plane.errors[-5:],
            "actions": len(plane.actions),
            "pass_s_p50": p50(plane.pass_s),
            "pass_s_max": max(plane.pass_s, default=None),
        },
        "agent_failures": {t: len(arm.failures) for t, arm in arms.items()},
        "setup_s": round(setup_s, 1),
        "traffic_s": round(traffic_s, 1),
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items()},
    }
    checks = {
        "reward_gain_vs_control": gain is not None and gain >= 1.5,
        "harmful_candidates": figures["harmful_candidates"] >= 1,
        "harmful_promoted": figures["harmful_promoted"] == 0,
        "weight_promoted": figures["weight_promoted"] >= 2,
        "ungated_served": ungated == 0,
        "reward_to_promoted_p50_s": figures["reward_to_promoted_p50_s"] is not None
        and figures["reward_to_promoted_p50_s"] <= 300,
    }
    figures["targets"] = TARGETS
    figures["target_checks"] = checks
    figures["meets_targets"] = all(checks.values())
    if tmp_ctx is not None:
        tmp_ctx.cleanup()
    if not (a.quick or a.no_save):
        recorded = {k: v for k, v in figures.items() if k != "quick"}
        record_run("governed_loop", recorded, TARGETS, headline=HEADLINE, command=figures["command"],
                   notes=f"{a.model}, extraction; tenants gated (own scope), control (none), gamed (own scope, "
                   f"rewards from a grader paying any reply naming Lisbon)")  # fmt: skip
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
