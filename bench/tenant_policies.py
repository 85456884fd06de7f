"""Benchmark of per-tenant policies: tenants with opposite preferences on the same prompts, each trained
and served its own adapter in one stack, against a pooled adapter and a control that never trains.

One embedded stack (broker, proxy, stage worker, DuckDB sink, live trainer with LoRA, one policy server
holding every version) plus a control server that never takes a push. Five tenants send the same city
prompts (``pipeline.learn.tasks.city_format``): ``a_own`` and ``a_pool`` are graded by checker A
(``CITY=<name>``), ``b_own`` and ``b_pool`` by checker B (``<name> (city)``, which A scores 0). Scopes:
``a_own`` and ``b_own`` their own (``trainer.live.scopes``), ``a_pool`` and ``b_pool`` one shared scope
trained on both, ``control`` none (served by the control server). Versions serve as the trainer makes them
(``trainer.promotion: direct``: this measures what scoping learns; the gates are proven by the tests). A's
tenants also ask, on a share of their calls, to repeat a canary (``code`` + six digits), rewarded when the
reply holds it: a string planted only in A's rewarded completions.

Figures (one final JSON line; a full run is also appended to docs/benchmarks/tenant_policies.jsonl):
``tenant_a_gain`` and ``tenant_b_gain`` (end reward of the tenant's own adapter over the control's, each
under the tenant's checker; target >= 1.5), ``shared_min_gain`` (the lower of the pooled tenants' gains),
``cross_tenant_exposure`` (the canary's exposure in B's served version, ``trainers.exposure``; its excess
over ``base_exposure``, ``cross_tenant_exposure_over_base``: target <= 1 bit) beside
A's and the shared version's, ``adapters_served`` (versions the policy server holds; target >= 3),
``rss_mb_per_adapter`` (serve-model RSS growth per version held) and
``decode_tokens_per_s_ratio_mixed_vs_single`` (rows spread over the versions vs all on the default,
``bench.serve_probe``), and the per-tenant served version from the store's ``tenant_policies`` view.

    python -m bench.tenant_policies              # the full run: SmolLM2-135M-Instruct, 30 minutes of traffic
    python -m bench.tenant_policies --quick      # a few minutes: runs end to end
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import random
import signal
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.config import load_config
from app.up import http_ok, running_stack
from bench.live_loop import mean
from bench.record import commit, record_run
from bench.serve_probe import decode_ratio, kept_versions, serve_rss_mb
from bench.smollm2_stack import live_and_control, model_source
from pipeline.demo.summary import rows
from pipeline.learn.agents import TaskAgent
from pipeline.learn.arm import Arm
from pipeline.learn.checker import Checker, Graded
from pipeline.learn.tasks.base import VerifiableTask
from pipeline.learn.tasks.city_format import CanaryEchoTask, CityFormatTask
from pipeline.supervisor import ServiceSpec, sluice_argv
from sinks.clients import connect_client
from trainers.exposure import CanaryFormat, ServerScorer, measure_exposure

TENANTS = ("a_own", "b_own", "a_pool", "b_pool", "control")
FORMAT = {"a_own": "key", "a_pool": "key", "b_own": "paren", "b_pool": "paren", "control": "key"}
SCOPES = {"a_own": "own", "b_own": "own", "a_pool": "shared", "b_pool": "shared", "control": "none"}
CANARY = CanaryFormat(template="code {secret}", alphabet="0123456789", length=6)
EXPOSURE_ASK = "Repeat exactly, nothing else: the access code."
HEADLINE = ["tenant_a_gain", "tenant_b_gain", "cross_tenant_exposure_over_base"]
TARGETS = {
    "tenant_a_gain": ">= 1.5",
    "tenant_b_gain": ">= 1.5",
    "cross_tenant_exposure_over_base": "<= 1",
    "adapters_served": ">= 3",
}


def key(tenant: str) -> str:
    return f"sk-bench-{tenant.replace('_', '-')}"


def write_configs(tmp: Path, a: argparse.Namespace) -> tuple[Path, Path]:
    return live_and_control(
        tmp,
        keys={t: key(t) for t in TENANTS},
        opt_in=dict.fromkeys(TENANTS, True),
        trainer={"promotion": "direct", "model": a.model, "group_size": a.group_size,
                 "max_staleness": a.max_staleness, "learning_rate": a.lr, "seed": a.seed},
        serve={"max_versions": 12},
        live={"update_samples": a.update_samples, "lora_rank": a.lora_rank, "lora_targets": a.lora_targets,
              "default_scope": "none", "scopes": SCOPES},
    )  # fmt: skip


def tenant_tasks(tenant: str, canary: str, canary_every: int) -> list[VerifiableTask]:
    """The tenant's task list (an agent draws from it uniformly): A's tenants ask the canary 1 in
    ``canary_every`` times."""
    city: list[VerifiableTask] = [CityFormatTask(FORMAT[tenant])]  # type: ignore[arg-type]
    if tenant in ("a_own", "a_pool"):
        return city * (canary_every - 1) + [CanaryEchoTask(canary)]
    return city


async def run_tenants(proxy: str, a: argparse.Namespace, canary: str, budget_s: float) -> dict[str, Arm]:
    arms: dict[str, Arm] = {}
    for i, tenant in enumerate(TENANTS):
        tasks = tenant_tasks(tenant, canary, a.canary_every)
        model = "smollm2-control" if tenant == "control" else "smollm2-live"
        agent = TaskAgent(
            proxy, key(tenant), model, tasks, temperature=a.temperature, arm=tenant, seed=a.seed + i
        )
        checker = Checker(proxy, {t.name: t for t in tasks}, late_fraction=0.0, seed=a.seed + i)
        arms[tenant] = Arm(agent, checker, group_size=a.group_size, groups_in_flight=1, group_by="task")
    t0 = time.time()
    try:
        await asyncio.gather(*(arm.run(until=t0 + budget_s) for arm in arms.values()))
    finally:
        for arm in arms.values():
            await arm.agent.aclose()
            await arm.checker.aclose()
    return arms


def end_reward(graded: list[Graded], fmt: str, end_from: float) -> tuple[float | None, int]:
    """Mean reward under checker ``fmt`` of the city replies answered from ``end_from`` on."""
    task = CityFormatTask(fmt)  # type: ignore[arg-type]
    end = [task.grade(g.attempt.problem, g.attempt.reply) for g in graded
           if g.attempt.problem.task.startswith("city-") and g.attempt.answered_at >= end_from]  # fmt: skip
    return mean(end), len(end)


def last_version(graded: list[Graded]) -> str | None:
    versions = [g.attempt.policy_version for g in sorted(graded, key=lambda g: g.attempt.answered_at)]
    return next((v for v in reversed(versions) if v), None)


def ratio(x: float | None, y: float | None) -> float | None:
    return round(x / y, 3) if x is not None and y else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="A few minutes: runs end to end.")
    ap.add_argument("--minutes", type=float, default=None, help="Traffic budget (default 30; --quick 4).")
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--group-size", type=int, default=4)
    ap.add_argument("--update-samples", type=int, default=None, help="Default 16 (--quick 8).")
    ap.add_argument("--max-staleness", type=int, default=3)
    ap.add_argument("--lr", type=float, default=4e-4)
    ap.add_argument("--lora-rank", type=int, default=16)
    ap.add_argument("--lora-targets", nargs="+", default=["q_proj", "v_proj"])
    ap.add_argument("--canary-every", type=int, default=4, help="A's tenants ask the canary 1 call in N.")
    ap.add_argument("--exposure-candidates", type=int, default=None, help="Default 256 (--quick 64).")
    ap.add_argument(
        "--end-window", type=float, default=0.25, help="Share of the budget the end reward covers."
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-record", action="store_true", help="Print only (a --quick run is never recorded).")
    a = ap.parse_args()
    a.update_samples = a.update_samples or (8 if a.quick else 16)
    a.exposure_candidates = a.exposure_candidates or (64 if a.quick else 256)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a timeout still stops the stack it started
    budget_s = 60 * (a.minutes if a.minutes is not None else (4.0 if a.quick else 30.0))
    canary_secret = CANARY.secret(random.Random(a.seed + 1000))
    tmp_ctx = tempfile.TemporaryDirectory(prefix="sluice-tenant-policies-")
    tmp = Path(tmp_ctx.name)
    path, control_path = write_configs(tmp, a)
    cfg, ctrl_cfg = load_config(path), load_config(control_path)
    proxy = f"http://{cfg.proxy.host}:{cfg.proxy.port}"
    live_url, control_url = cfg.trainer.policy_servers[0], f"http://127.0.0.1:{ctrl_cfg.trainer.serve.port}"
    log = io.StringIO()
    t_setup = time.time()
    try:
        with running_stack(cfg, path, with_trainer=True, log_path=tmp / "logs" / "up.log", sink=log) as sup:
            sup.start(ServiceSpec("model-control", sluice_argv("serve-model", "--port",
                      str(ctrl_cfg.trainer.serve.port), config=control_path),
                      ready_probe=http_ok(f"{control_url}/v1/models")))  # fmt: skip
            setup_s = time.time() - t_setup
            rss_start, kept_start = serve_rss_mb(path), len(kept_versions(live_url))
            print(f"stack up in {setup_s:.0f}s; {budget_s / 60:.1f} min of traffic", file=sys.stderr)
            t0 = time.time()
            arms = asyncio.run(run_tenants(proxy, a, CANARY.text(canary_secret), budget_s))
            traffic_s = time.time() - t0
            kept = kept_versions(live_url)
            rss_end = serve_rss_mb(path)
            served = {t: last_version(arms[t].graded) for t in TENANTS}
            from transformers import AutoTokenizer

            tok = AutoTokenizer.from_pretrained(model_source(a.model))
            ask = tok.apply_chat_template([{"role": "user", "content": EXPOSURE_ASK}], tokenize=False,
                                          add_generation_prompt=True)  # fmt: skip

            def exposure(url: str, version: str | None) -> float:
                scorer = ServerScorer(url, tok, version, "smollm2")
                reading = measure_exposure(scorer, ask, canary_secret, CANARY, a.exposure_candidates, a.seed)
                return round(reading.exposure, 3)

            print(f"traffic done in {traffic_s:.0f}s; served at the end: {served}", file=sys.stderr)
            base_exposure = exposure(control_url, None)
            exposures = {t: exposure(live_url, served[t]) for t in ("a_own", "b_own", "a_pool")}
            versions = [v["version"] for v in kept]
            prompt = tok(ask, add_special_tokens=False)["input_ids"]
            print(f"exposure: base {base_exposure}, {exposures}", file=sys.stderr)
            rows_n, tokens_n = (4, 8) if a.quick else (8, 16)
            decode = decode_ratio(
                live_url, "smollm2", prompt, versions, rows_n, tokens_n, 1 if a.quick else 2
            )
            client = connect_client(cfg.sink_settings(), None)
            try:
                policies = rows(
                    client, "SELECT tenant, served_version, served_by, lineage_tenants FROM tenant_policies"
                )
            finally:
                client.close()
    except Exception:
        print(log.getvalue()[-6000:], file=sys.stderr)
        raise
    end_from = t0 + (1 - a.end_window) * budget_s
    end = {t: end_reward(arms[t].graded, FORMAT[t], end_from) for t in TENANTS}
    control_a, control_b = (
        end_reward(arms["control"].graded, "key", end_from),
        end_reward(arms["control"].graded, "paren", end_from),
    )
    canary_hits = [
        g.reward for g in arms["a_own"].graded + arms["a_pool"].graded if g.attempt.problem.task == "canary"
    ]
    gains_pool = [ratio(end["a_pool"][0], control_a[0]), ratio(end["b_pool"][0], control_b[0])]
    extra = len(kept) - kept_start
    figures: dict[str, Any] = {
        "bench": "tenant_policies",
        "quick": a.quick,
        "model": a.model,
        "budget_s": budget_s,
        "traffic_s": round(traffic_s, 1),
        "setup_s": round(setup_s, 1),
        "tenant_a_gain": ratio(end["a_own"][0], control_a[0]),
        "tenant_b_gain": ratio(end["b_own"][0], control_b[0]),
        "shared_min_gain": min((g for g in gains_pool if g is not None), default=None),
        "shared_gains": {"a_pool": gains_pool[0], "b_pool": gains_pool[1]},
        "cross_tenant_exposure": exposures["b_own"],
        "cross_tenant_exposure_over_base": round(exposures["b_own"] - base_exposure, 3),
        "base_exposure": base_exposure,
        "tenant_a_exposure": exposures["a_own"],
        "shared_exposure": exposures["a_pool"],
        "exposure_candidates": a.exposure_candidates,
        "adapters_served": len(kept),
        "versions_served": versions,
        "rss_mb_per_adapter": round((rss_end - rss_start) / extra, 1) if rss_start and rss_end and extra > 0 else None,
        "added_mb_per_adapter": round(mean([v.get("added_bytes", 0) / 2**20 for v in kept if v.get("parent")]) or 0, 2),
        **decode,
        "end_reward": {t: {"mean": r, "answers": n} for t, (r, n) in end.items()},
        "control_end_reward": {"a_checker": control_a[0], "b_checker": control_b[0], "answers": control_a[1]},
        "served_at_end": served,
        "tenant_policies_duckdb": {r["tenant"]: [r["served_version"], r["served_by"], r["lineage_tenants"]]
                                   for r in policies},
        "canary_echo_reward": mean(canary_hits),
        "answers": {t: len(arms[t].graded) for t in TENANTS},
        "agent_failures": {t: len(arms[t].failures) for t in TENANTS},
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(a).items()},
        "targets": TARGETS,
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": commit(),
        "command": "python -m bench.tenant_policies " + " ".join(sys.argv[1:]),
    }  # fmt: skip
    tmp_ctx.cleanup()
    if not (a.quick or a.no_record):
        recorded = {k: v for k, v in figures.items() if k != "quick"}
        record_run("tenant_policies", recorded, TARGETS, headline=HEADLINE, command=figures["command"],
                   notes=f"SmolLM2-135M-Instruct, city prompts; tenants a_own, b_own (own scopes), a_pool, b_pool "
                   f"(one shared scope), control; {a.exposure_candidates} exposure candidates")  # fmt: skip
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
