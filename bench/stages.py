"""Governance-stage throughput: Faust stage workers, end to end through a real (Tansu) broker.

Workload: synthetic agent trajectories (``bench.data.agent_trajectories``: 0.3-2.5 KB texts, ~15% with
PII or a secret), each as its steps, an end event and a ``score`` reward (``required``), so every
trajectory is emitted as soon as its end is joined. Three measurements in one run:

- ``stages``: ``sluice stages`` (redact -> eligibility -> reward join -> replay grade, rocksdb tables,
  the embedded default's broker profile); input events/s from the first produce to the last trajectory
  on the audited topic, worker already up.
- ``passthrough`` (baseline): a minimal Faust worker on the same broker and settings that copies the
  raw topics to an output topic, no tables, no decisions — the ceiling Faust + broker set.
- ``logic`` (baseline): the same decisions in-process without Faust or Kafka (redact, transitions,
  emission building) — the CPU cost of the decisions themselves.

One worker on each side by default; ``--workers N`` starts N processes on each side, in one consumer
group (``sluice up`` starts ``stages.workers`` of them; the shipped config has 2). The pair runs
``--rounds`` times in alternating order and the figures are medians (``ratio_vs_passthrough`` is the
median of the per-round ratios); each run also reports the workers' CPU milliseconds per input event
(``/proc``), which a shared machine disturbs less than wall-clock rates.

    python -m bench.stages                                  # ~4 min
    python -m bench.stages --trajectories 100 --rounds 1    # quicker
    python -m bench.stages --workers 2                      # as the shipped config runs the stages
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import yaml
from confluent_kafka import Consumer, Producer

from app.config import SluiceConfig, load_config, parse_config
from bench.data.agent_trajectories import build_trajectories
from bench.kafka_load import produce_waiting
from bench.proxy import cpu_seconds
from infra.broker import LocalBroker
from sluice.events import Consent, Governance, Reward, RewardEvent, StepMetadata, TrajectoryEndEvent, encode
from sluice.step_refs import is_step_record_key

TARGETS = {"stages_events_per_s_min": 150.0, "ratio_vs_passthrough_min": 0.7}
REPO = Path(__file__).resolve().parent.parent


def workload(n: int, turns: int) -> list[tuple[str, str, bytes]]:
    """(logical topic, key, value) in produce order."""
    out: list[tuple[str, str, bytes]] = []
    gov = Governance(consent=Consent(training=True), data_class="internal")
    for steps in build_trajectories(seed=7, n=n, turns=turns):
        tid = steps[0].trajectory_id
        for s in steps:
            s = s.model_copy(update={"governance": gov, "metadata": StepMetadata(model_version="v1")})
            s.metadata.gen_ai.request_model = "sluice-tiny-1"
            out.append(("steps_raw", tid, encode(s)))
        out.append(
            (
                "rewards_raw",
                tid,
                encode(RewardEvent(trajectory_id=tid, tenant="acme", reward=Reward(name="score", value=1.0))),
            )
        )
        out.append(("steps_raw", tid, encode(TrajectoryEndEvent(trajectory_id=tid, tenant="acme"))))  # fmt: skip
    return out


def bench_config(bootstrap: str, tmp: Path, partitions: int) -> SluiceConfig:
    return parse_config(
        {
            "broker": {"bootstrap_servers": bootstrap, "profile": "tansu", "embedded": False},
            "topics": {"prefix": f"b{uuid.uuid4().hex[:8]}.", "partitions": partitions},
            "stages": {"data_dir": str(tmp / "stages"), "stats_interval_s": 5},
            "rewards": {"required": ["score"], "wait_s": 60, "idle_end_s": 600, "tick_s": 1},
            "eligibility": {"tenants": {"acme": {"training_opt_in": True}}},
        },
        base_dir=tmp,
    )


def produce(cfg: SluiceConfig, events: list[tuple[str, str, bytes]]) -> float:
    p = Producer(cfg.broker.producer_config())
    t0 = time.perf_counter()
    for logical, key, value in events:
        produce_waiting(p, cfg.topics.name(logical), key.encode(), value)
    p.flush()
    return t0


class OutputCounter:
    """A consumer of the output topic, joined (partitions assigned) before anything is produced."""

    def __init__(self, cfg: SluiceConfig, topic: str, timeout_s: float = 60) -> None:
        self.c = Consumer(cfg.broker.consumer_config(f"bench-{uuid.uuid4().hex[:8]}"))
        self.c.subscribe([topic])
        self.topic = topic
        deadline = time.monotonic() + timeout_s
        while not self.c.assignment():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}: no assignment after {timeout_s}s")
            self.c.poll(0.1)

    def wait_for(self, expect: int, timeout_s: float) -> float:
        """Time (perf_counter) at which the ``expect``-th record was read (a trajectory's step records,
        keyed ``step_record_key``, are not counted: a version is its header)."""
        n, deadline = 0, time.monotonic() + timeout_s
        try:
            while n < expect:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{self.topic}: {n}/{expect} records after {timeout_s}s")
                msg = self.c.poll(0.05)
                if msg is not None and not msg.error() and not is_step_record_key(msg.key()):
                    n += 1
            return time.perf_counter()
        finally:
            self.c.close()


READY_PARTITIONS = re.compile(r"partitions=\[([0-9, ]*)\]")


def _assigned(log: Path, ready: str) -> set[int] | None:
    """The partitions of the last readiness line in ``log`` (None before the first)."""
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if ready in ln]
    if not lines:
        return None
    m = READY_PARTITIONS.search(lines[-1])
    return {int(p) for p in m.group(1).split(",") if p.strip()} if m else set()


def start_workers(argv: list[str], logs: list[Path], ready: str, partitions: int,
                  timeout_s: float = 240) -> list[subprocess.Popen[bytes]]:  # fmt: skip
    """Start one process per log together (one group join) and wait until, by their readiness lines,
    every partition is assigned to exactly one of them."""
    procs = []
    for log in logs:
        with open(log, "wb") as f:
            procs.append(subprocess.Popen(argv, cwd=REPO, stdout=f, stderr=subprocess.STDOUT))
    deadline = time.monotonic() + timeout_s
    while True:
        assigned = [_assigned(log, ready) for log in logs]
        if all(a for a in assigned):
            union = set().union(*assigned)  # type: ignore[misc]
            if len(union) == partitions and sum(map(len, assigned)) == partitions:  # type: ignore[arg-type]
                return procs
        if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
            for p in procs:
                p.kill()
            tails = "\n".join(log.read_text(errors="replace")[-2000:] for log in logs)
            raise RuntimeError(f"workers not ready: {tails}")
        time.sleep(0.2)


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_endtoend(cfg: SluiceConfig, tmp: Path, events: list, expect_topic: str, expect: int, argv: list[str],
                 ready: str, workers: int) -> tuple[float, float]:  # fmt: skip
    """(input events/s, workers' CPU ms per input event) from the first produce to the last output."""
    config_file = tmp / f"{uuid.uuid4().hex[:6]}.yaml"
    config_file.write_text(yaml.safe_dump(json.loads(cfg.model_dump_json())))
    logs = [tmp / f"{config_file.stem}-{i}.log" for i in range(workers)]
    procs = start_workers([*argv, str(config_file)], logs, ready, cfg.topics.partitions)
    try:
        counter = OutputCounter(cfg, cfg.topics.name(expect_topic))
        cpu0 = sum(cpu_seconds(p.pid) for p in procs)
        t0 = produce(cfg, events)
        t1 = counter.wait_for(expect, timeout_s=600)
        cpu = sum(cpu_seconds(p.pid) for p in procs) - cpu0
        return len(events) / (t1 - t0), cpu * 1000 / len(events)
    finally:
        for p in procs:
            stop(p)


def run_logic(cfg: SluiceConfig, events: list[tuple[str, str, bytes]]) -> float:
    """The stages' decisions in one process, as the worker makes them: redact, transitions, emission by
    reference (``on_topic`` for the audited and, when trained, the train topic), with the heap settled as
    the worker settles it once it is up."""
    from pydantic_core import from_json

    from governance.redaction import Redactor
    from governance.reward_join import (
        apply_end,
        apply_reward,
        apply_step,
        build_emission,
        on_topic,
        plan_emission,
        step_payloads,
    )
    from pipeline.stages.scheduler import GEN0_THRESHOLD
    from sluice.events import StepEvent
    from sluice.heap import settle_heap

    redactor = Redactor.from_config(cfg.redaction)
    settle_heap(GEN0_THRESHOLD)
    placeholders: dict = {}
    states: dict = {}
    stored: dict[str, dict[str, tuple[StepEvent, bytes]]] = {}
    t0 = time.perf_counter()
    now = time.time()
    for _, tid, value in events:
        red, placeholders[tid] = redactor.redact_data(from_json(value), placeholders.get(tid))
        if isinstance(red, StepEvent):
            tr = apply_step(states.get(tid), red, now, cfg.rewards, cfg.eligibility)
            if tr.store_step:
                stored.setdefault(tid, {})[red.event_id] = (red, encode(red))
        elif isinstance(red, RewardEvent):
            tr = apply_reward(states.get(tid), red, now, cfg.rewards)
        else:
            tr = apply_end(states.get(tid), red, now, cfg.eligibility)
        state = tr.state
        plan = plan_emission(state, cfg.rewards, now)
        if plan is not None:
            bodies = stored.get(tid, {})
            steps = [bodies[e][0] for e in state.stored_step_ids if e in bodies]
            emission = build_emission(state, steps, plan, cfg.rewards, cfg.eligibility, cfg.replay, now)
            sent = dict(state.sent_steps)
            payloads = step_payloads(emission.trajectory, bodies)
            for role in ("audited", "train") if emission.to_train else ("audited",):
                out = on_topic(emission.trajectory, sent.get(role, {}), payloads)
                encode(out.header)
                sent[role] = out.sent
            state = state.model_copy(
                update={"emitted_version": plan.version, "dirty": False, "sent_steps": sent}
            )
        states[tid] = state
    return len(events) / (time.perf_counter() - t0)


def passthrough_worker(config_path: str) -> None:
    """Baseline worker: raw topics -> one output topic, same broker settings, nothing else."""
    import faust

    cfg = load_config(config_path)
    datadir = cfg.path(cfg.stages.data_dir) / f"pt-{os.getpid()}"
    datadir.mkdir(parents=True, exist_ok=True)
    app = faust.App(f"{cfg.topics.prefix}passthrough", datadir=str(datadir),
                    web_enabled=False, topic_disable_leader=True, broker_commit_interval=cfg.stages.commit_interval_s,
                    **cfg.broker.faust_settings())  # fmt: skip
    raw = {"key_serializer": "raw", "value_serializer": "raw"}
    src = app.topic(cfg.topics.name("steps_raw"), cfg.topics.name("rewards_raw"), **raw)
    out = app.topic(cfg.topics.name("steps_redacted"), **raw)

    @app.agent(src, name="passthrough")
    async def copy(stream):  # type: ignore[no-untyped-def]
        async for event in stream.events():
            await out.send(
                key=event.message.key, value=event.message.value, partition=event.message.partition
            )

    @app.timer(0.5)
    async def ready() -> None:
        steps_raw = cfg.topics.name("steps_raw")
        mine = sorted(tp.partition for tp in app.consumer.assignment() if tp.topic == steps_raw)
        if not app.rebalancing and mine:
            print(f"passthrough ready partitions={mine}", flush=True)

    faust.Worker(app, loglevel="WARNING", redirect_stdouts=False).execute_from_commandline()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trajectories", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3, help="Alternating rounds (median).")
    ap.add_argument("--turns", type=int, default=8)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument(
        "--workers",
        type=int,
        default=1,
        help="Worker processes on each side, one consumer group each (the shipped config runs 2).",
    )
    ap.add_argument("--passthrough-worker", metavar="CONFIG", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.passthrough_worker:
        passthrough_worker(args.passthrough_worker)
        return
    from pipeline.stages.internal_topics import ensure_stage_topics

    events = workload(args.trajectories, args.turns)
    workers = args.workers
    passthrough = [sys.executable, "-m", "bench.stages", "--passthrough-worker"]
    stages_argv = [sys.executable, "-m", "app.cli", "stages", "--config"]
    rates: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as d, LocalBroker() as broker:
        tmp = Path(d)
        logic = run_logic(bench_config(broker.bootstrap_servers, tmp, args.partitions), events)
        print(f"logic (in-process decisions): {logic:,.0f} events/s", file=sys.stderr)
        # alternating rounds: a shared machine drifts
        for r in range(args.rounds):
            order = [
                ("passthrough", passthrough, "steps_redacted", len(events), "passthrough ready"),
                ("stages", stages_argv, "trajectories_audited", args.trajectories, "sluice stages ready"),
            ]
            for name, argv, out, expect, ready in order if r % 2 == 0 else order[::-1]:
                cfg = bench_config(broker.bootstrap_servers, tmp, args.partitions)
                ensure_stage_topics(cfg.stages_settings())
                rate, ms = run_endtoend(cfg, tmp, events, out, expect, argv, ready, workers)
                rates.setdefault(name, []).append(rate)
                cpu.setdefault(name, []).append(ms)
                print(f"{name} (round {r + 1}): {rate:,.0f} events/s, {ms:.2f} CPU ms/event", file=sys.stderr)
    ratios = [s / p for s, p in zip(rates["stages"], rates["passthrough"], strict=True)]
    stages, pt = statistics.median(rates["stages"]), statistics.median(rates["passthrough"])
    ratio = statistics.median(ratios)
    result = {
        "bench": "stages",
        "events": len(events),
        "trajectories": args.trajectories,
        "steps_per_trajectory": args.turns,
        "partitions": args.partitions,
        "rounds": args.rounds,
        "workers": workers,
        "cpus": os.cpu_count(),
        "stages_events_per_s": round(stages, 1),
        "passthrough_events_per_s": round(pt, 1),
        "stages_cpu_ms_per_event": round(statistics.median(cpu["stages"]), 3),
        "passthrough_cpu_ms_per_event": round(statistics.median(cpu["passthrough"]), 3),
        "logic_events_per_s": round(logic, 1),
        "ratio_vs_passthrough": round(ratio, 3),
        "ratios_by_round": [round(x, 3) for x in ratios],
        "ratio_vs_logic": round(stages / logic, 3),
        "targets": TARGETS,
        "meets_targets": stages >= TARGETS["stages_events_per_s_min"]
        and ratio >= TARGETS["ratio_vs_passthrough_min"],
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
