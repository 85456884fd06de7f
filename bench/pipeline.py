"""Benchmark the whole pipeline on the embedded default: proxy → broker → stages → DuckDB sink.

Every service runs as its own process exactly as ``sluice up`` starts it (local Tansu broker, pattern-only
redaction), with the OpenAI-compatible echo backend as the model so the figures are the pipeline's, not a
model's. Three phases, one run:

1. Throughput and latency: T trajectories of K steps through the proxy at C concurrent agents, each then
   ended, timed once a warm-up of 8 trajectories is queryable (every service up, groups settled).
   ``steps_per_s`` = steps / (first call → last step queryable in DuckDB). Latency = time from the start
   of a trajectory's last LLM call to its row being queryable (p50/p99). CPU seconds per service come
   from /proc (utime+stime), split by service.
2. Cost growth: M agents in lock step for 50 turns, each call re-sending the whole history as agents do.
   The CPU of proxy+stages per step over turns 46–50 divided by turns 1–5 (a quadratic design grows ~50×;
   the target is ≤ 1.5×), and the bytes of the raw step event at turn 50 vs turn 1.
3. Pending joins: P trajectories opened (one step, never ended) and the stage worker's RSS before/after:
   ``bytes_per_pending_trajectory``; join state lives in RocksDB on disk, so this is its RAM share.
4. Late rewards (``bench.late_reward``): bytes written to the audited and train topics for one late reward
   on a 50-step trajectory over a 1-step one, ``late_reward_bytes_turn50_vs_turn1`` (target <= 1.5).

    python -m bench.pipeline            # ~3-4 min on 2 cores
    python -m bench.pipeline --quick    # smaller, for a smoke run
    python -m bench.pipeline --set broker.stage_linger_ms=0   # one setting changed, for a paired run
    python -m bench.pipeline --only late_reward              # phase 4 alone (~1 min)
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import aiohttp
import yaml

from app.config import load_config
from app.up import http_ok
from bench.late_reward import phase_late_reward
from infra.broker import free_port, port_open
from pipeline.demo.summary import rows
from pipeline.supervisor import ServiceSpec, Supervisor, sluice_argv
from pipeline.topic_ends import TopicEnds
from pipeline.topics import create_topics
from sinks.clients import connect_client
from sluice.events import TENANT_SEP

KEY = "sk-bench-tenant"
DEFAULT = load_config()  # the embedded default: its partition and stage-worker counts are what is measured
TICK = os.sysconf("SC_CLK_TCK")


def write_config(tmp: Path, overrides: Sequence[str] = ()) -> Path:
    """The benchmark's config file; ``overrides`` are ``section.key=value`` (value read as YAML)."""
    ports = {name: free_port() for name in ("broker", "proxy", "echo", "sink")}
    cfg = {
        "broker": {"bootstrap_servers": f"127.0.0.1:{ports['broker']}", "profile": "tansu", "embedded": True},
        "topics": {"prefix": "bench.", "partitions": DEFAULT.topics.partitions},
        "proxy": {
            "port": ports["proxy"],
            "backends": [
                {"name": "echo", "base_url": f"http://127.0.0.1:{ports['echo']}/v1", "models": ["*"]}
            ],
            "api_keys": [{"key": KEY, "tenant": "bench", "data_class": "internal", "consent_training": True}],
            "spool_dir": str(tmp / "spool"),
        },
        "stages": {"data_dir": str(tmp / "stages"), "workers": DEFAULT.stages.workers},
        "eligibility": {"tenants": {"bench": {"training_opt_in": True}}},
        "rewards": {"required": [], "wait_s": 0, "idle_end_s": 3600},
        "sink": {"database": str(tmp / "bench.duckdb"), "query_port": ports["sink"], "batch_max_wait_s": 0.2},
        "up": {"local_model_backend": "echo"},
    }
    for item in overrides:
        dotted, _, value = item.partition("=")
        section, _, key = dotted.partition(".")
        cfg.setdefault(section, {})[key] = yaml.safe_load(value)
    path = tmp / "bench.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (the broker service is a Python wrapper around the Tansu binary)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents.setdefault(int(_stat(int(entry.name))[1]), []).append(int(entry.name))
            except (OSError, IndexError):
                continue
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(parents.get(p, []))
    return out


def cpu_s(pid: int) -> float:
    """utime + stime of a process and its descendants, in seconds."""
    total = 0
    for p in process_tree(pid):
        try:
            f = _stat(p)
            total += int(f[11]) + int(f[12])
        except OSError:
            continue
    return total / TICK


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


class Agents:
    """Raw aiohttp agents (lighter than an SDK, so the load generator steals less CPU from the pipeline)."""

    def __init__(self, root: str, concurrency: int) -> None:
        self.root = root
        self.sem = asyncio.Semaphore(concurrency)
        self.session = aiohttp.ClientSession(headers={"Authorization": f"Bearer {KEY}"})

    async def call(self, tid: str, messages: list[dict]) -> dict:
        async with (
            self.sem,
            self.session.post(
                f"{self.root}/v1/chat/completions",
                json={"model": "echo-1", "messages": messages, "max_tokens": 16},
                headers={"x-sluice-trajectory-id": tid},
            ) as resp,
        ):
            body = await resp.json()
            if resp.status != 200:
                raise RuntimeError(f"proxy answered {resp.status}: {body}")
            return body

    async def end(self, tid: str) -> None:
        async with self.sem, self.session.post(f"{self.root}/v1/trajectories/{tid}/end", json={}) as resp:
            if resp.status >= 300:
                raise RuntimeError(f"end answered {resp.status}")

    async def conversation(self, tid: str, turns: int, last_call: dict[str, float]) -> None:
        messages = [{"role": "system", "content": "You are a support agent."}]
        for turn in range(turns):
            messages.append(
                {"role": "user", "content": f"Order {turn} for jane.doe{turn}@example.com, thanks."}
            )
            last_call[tid] = time.monotonic()
            body = await self.call(tid, messages)
            messages.append(body["choices"][0]["message"])
        await self.end(tid)


def wait_rows(client, sql: str, target: int, timeout_s: float, seen: dict[str, float] | None = None) -> float:
    """Poll until ``sql`` (returning trajectory_id, n) sums to ``target``; record first-seen times."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = rows(client, sql)
        now = time.monotonic()
        if seen is not None:
            for r in got:
                seen.setdefault(r["trajectory_id"].split(TENANT_SEP, 1)[-1], now)  # the agent's own name
        if sum(r["n"] for r in got) >= target:
            return now
        time.sleep(0.1)
    raise TimeoutError(f"only {sum(r['n'] for r in got)}/{target} rows after {timeout_s}s")


def phase_throughput(
    cfg, sup: Supervisor, trajectories: int, steps: int, concurrency: int, prefix: str = "tp"
) -> dict:
    root = f"http://127.0.0.1:{cfg.proxy.port}"
    tids = [f"{prefix}-{uuid.uuid4().hex[:12]}" for _ in range(trajectories)]
    last_call: dict[str, float] = {}
    seen: dict[str, float] = {}
    cpu0 = {n: cpu_s(sup.pid(n)) for n in sup.names()}

    async def run() -> None:
        agents = Agents(root, concurrency)
        try:
            await asyncio.gather(*(agents.conversation(t, steps, last_call) for t in tids))
        finally:
            await agents.session.close()

    t0 = time.monotonic()
    asyncio.run(run())
    sent = time.monotonic()
    client = connect_client(cfg.sink_settings(), None)
    try:
        done = wait_rows(
            client,
            f"SELECT trajectory_id, step_count AS n FROM trajectories WHERE trajectory_id LIKE '%~{prefix}-%'",
            trajectories * steps,
            timeout_s=600,
            seen=seen,
        )
    finally:
        client.close()
    cpu = {n: round(cpu_s(sup.pid(n)) - cpu0[n], 2) for n in sup.names()}
    lat = sorted(seen[t] - last_call[t] for t in tids)
    return {
        "steps": trajectories * steps,
        "steps_per_s": round(trajectories * steps / (done - t0), 1),
        "send_s": round(sent - t0, 2),
        "p50_latency_s": round(statistics.median(lat), 3),
        "p99_latency_s": round(lat[min(len(lat) - 1, int(0.99 * len(lat)))], 3),
        "cpu_s_by_service": cpu,
    }


def phase_growth(cfg, sup: Supervisor, agents_n: int, turns: int) -> dict:
    """Lock-step agents; CPU of proxy+stages per step by turn window (waits for each turn to be redacted)."""
    root = f"http://127.0.0.1:{cfg.proxy.port}"
    topic = cfg.topics.name("steps_redacted")
    parts = [(topic, p) for p in range(cfg.topics.partitions)]

    ends = TopicEnds(cfg.broker, timeout_s=5)  # asked every 50 ms: one probe consumer for the phase

    def redacted_total() -> int:
        return sum(ends.end_offsets(parts).values())

    pids = [sup.pid(n) for n in sup.names() if n == "proxy" or n.startswith("stages")]
    histories = {
        f"tg-{uuid.uuid4().hex[:12]}": [{"role": "system", "content": "You are terse."}]
        for _ in range(agents_n)
    }
    per_turn_cpu: list[float] = []
    base = redacted_total()

    async def turn(agents: Agents, i: int) -> None:
        async def one(tid: str) -> None:
            h = histories[tid]
            h.append({"role": "user", "content": f"Turn {i}: call me at +1 415-555-01{i % 100:02d} please."})
            body = await agents.call(tid, h)
            h.append(body["choices"][0]["message"])

        await asyncio.gather(*(one(t) for t in histories))

    async def run() -> None:
        agents = Agents(root, agents_n)
        try:
            for i in range(turns):
                c0 = sum(cpu_s(p) for p in pids)
                await turn(agents, i)
                target = base + agents_n * (i + 1)
                deadline = time.monotonic() + 120
                while redacted_total() < target and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
                per_turn_cpu.append((sum(cpu_s(p) for p in pids) - c0) / agents_n)
            for tid in histories:
                await agents.end(tid)
        finally:
            await agents.session.close()

    try:
        asyncio.run(run())
    finally:
        ends.close()
    w = 5
    first, last = statistics.mean(per_turn_cpu[:w]), statistics.mean(per_turn_cpu[-w:])
    return {
        "cost_growth_turn50_vs_turn1": round(last / first, 2) if first > 0 else None,
        "cpu_ms_per_step_turns_1_5": round(first * 1000, 2),
        f"cpu_ms_per_step_turns_{turns - w + 1}_{turns}": round(last * 1000, 2),
    }


def phase_pending(cfg, sup: Supervisor, pending: int) -> dict:
    root = f"http://127.0.0.1:{cfg.proxy.port}"
    workers = [sup.pid(n) for n in sup.names() if n.startswith("stages")]
    before = sum(rss_bytes(p) for p in workers)

    async def run() -> None:
        agents = Agents(root, 32)
        try:
            await asyncio.gather(
                *(
                    agents.call(f"pp-{i}-{uuid.uuid4().hex[:8]}", [{"role": "user", "content": f"hello {i}"}])
                    for i in range(pending)
                )
            )
        finally:
            await agents.session.close()

    asyncio.run(run())
    time.sleep(5)  # let the worker take the steps in
    after = sum(rss_bytes(p) for p in workers)
    disk = sum(f.stat().st_size for f in cfg.path(cfg.stages.data_dir).rglob("*") if f.is_file())
    return {
        "pending_trajectories": pending,
        "bytes_per_pending_trajectory": max(0, round((after - before) / pending)),
        "stage_state_disk_mb": round(disk / 1e6, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="Override one setting of the benchmark's config (repeatable), e.g. broker.stage_linger_ms=0.",
    )
    ap.add_argument(
        "--only",
        choices=["late_reward"],
        help="Run one phase only once the services are up (late_reward: bytes per late reward, 1 vs 50 steps).",
    )
    args = ap.parse_args()
    for item in args.set:
        if not re.fullmatch(r"[a-z_]+\.[a-z_]+=.*", item):
            ap.error(f"--set {item!r}: expected SECTION.KEY=VALUE, e.g. broker.stage_linger_ms=0")
    trajectories, steps, turns, pending = (120, 5, 20, 500) if args.quick else (400, 5, 50, 3000)
    with tempfile.TemporaryDirectory(prefix="sluice-bench-") as tmpdir:
        tmp = Path(tmpdir)
        path = write_config(tmp, args.set)
        cfg = load_config(path)
        sup = Supervisor(log_path=tmp / "services.log", sink=io.StringIO())
        echo_port = cfg.local_model_port()
        try:
            sup.start(
                ServiceSpec(
                    "broker",
                    sluice_argv("broker", config=path),
                    ready_probe=lambda: port_open("127.0.0.1", cfg.broker.port),
                )
            )
            create_topics(cfg.broker, cfg.topics)
            sup.start(
                ServiceSpec(
                    "echo",
                    [sys.executable, "-m", "infra.echo_backend", "--port", str(echo_port)],
                    ready_probe=http_ok(f"http://127.0.0.1:{echo_port}/v1/models"),
                )
            )
            sup.start(
                ServiceSpec(
                    "proxy",
                    sluice_argv("proxy", config=path),
                    ready_probe=http_ok(f"http://127.0.0.1:{cfg.proxy.port}/healthz"),
                )
            )
            # the embedded default's worker count (the worker is bound by broker round trips: scale out)
            sup.start_together(
                [
                    ServiceSpec(f"stages-{i}", sluice_argv("stages", config=path))
                    for i in range(cfg.stages.workers)
                ]
            )
            sup.start(ServiceSpec("sink", sluice_argv("sink", config=path)))
            # the figures are the sustained rate, not start-up: the stage workers settle their group and
            # the sink its partitions before anything is timed, shown by a few trajectories end to end
            if args.only == "late_reward":
                late = phase_late_reward(cfg, Agents)
                print(
                    json.dumps({"bench": "pipeline", **late, "target_late_reward_bytes_turn50_vs_turn1": 1.5})
                )
                return
            warm = phase_throughput(cfg, sup, 8, steps, concurrency=8, prefix="tw")
            print(f"services up; warm-up: {warm['steps']} steps queryable; phase 1: throughput and latency",
                  file=sys.stderr)  # fmt: skip
            result = {
                "bench": "pipeline",
                "stage_workers": cfg.stages.workers,
                **phase_throughput(cfg, sup, trajectories, steps, concurrency=32),
            }
            print(f"phase 1: {result}", file=sys.stderr)
            print("phase 2: cost growth with trajectory length", file=sys.stderr)
            result.update(phase_growth(cfg, sup, agents_n=20, turns=turns))
            print("phase 3: memory per pending reward join", file=sys.stderr)
            result.update(phase_pending(cfg, sup, pending))
            print("phase 4: bytes per late reward, 1 vs 50 steps", file=sys.stderr)
            result.update(phase_late_reward(cfg, Agents))
        finally:
            sup.stop_all()
    result.update(
        target_steps_per_s=600,
        target_p99_latency_s=3.0,
        target_cost_growth_turn50_vs_turn1=1.5,
        target_late_reward_bytes_turn50_vs_turn1=1.5,
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
