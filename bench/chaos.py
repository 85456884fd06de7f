"""Chaos benchmark: steady agent traffic through the embedded default while services die, round after round.

    python -m bench.chaos                    # 20 rounds, ~10-15 min on 2 cores
    python -m bench.chaos --rounds 30 --seed 7

It starts the embedded default (`sluice up`'s services: broker, tiny model server, proxy, two stage
workers, the DuckDB sink) under its supervisor, which restarts what dies. Agents (``--agents`` concurrent,
real HTTP) run multi-step trajectories with canary PII and secrets in their messages, post rewards (some
at once, some late: after the trajectory ended and was emitted) and end them. Every round picks one
fault at random:

- ``proxy`` / ``stages`` (a random worker) / ``sink`` / ``model``: SIGKILL of that service's process;
- ``broker_pause``: the broker is frozen (SIGSTOP) for 2-8 s, then resumed (SIGCONT);
- ``broker_kill``: SIGKILL of the embedded broker, which comes back as a new, empty cluster: the
  supervisor holds its consumers, carries the stage tables in, and the proxy sends what had not landed;
- ``stack_restart``: the whole stack stops cleanly (as Ctrl-C on `sluice up` does: proxy first, then a
  drain of the broker's topics) and a new one starts on the same files with a new, empty embedded broker,
  while the agents keep calling (their calls wait while nothing listens). Late rewards of trajectories
  from before the restart must still join them;
- ``stack_kill``: every service of the stack dies by SIGKILL at once (no drain, the broker's topics are
  gone) and a new stack starts on the same files.

After each fault a probe trajectory is sent; the round's recovery time is from the fault (the resume, for
a pause) until that probe is queryable in DuckDB. After the rounds the traffic stops and everything is
given time to land; then it checks, against what the agents were answered:

- ``lost``: trajectories whose every call was answered but whose latest version in DuckDB does not hold
  each of those steps exactly once (or that never landed);
- ``duplicated``: (trajectory, step) pairs stored more than once, or steps whose content landed at more
  than one step index;
- ``rewards_lost``: rewards the proxy accepted (202) that are not in DuckDB's ``rewards``;
- ``canary_leaks``: canary values found anywhere in DuckDB.

A call the agent could not complete (the model server was down: 502; the proxy died mid-call) abandons
its trajectory: the agent ends it as abandoned, and each step it *was* answered for must land exactly
once (``abandoned_lost``: ended abandoned trajectories missing one; the unanswered call may or may not be
recorded). Only complete trajectories count in ``trajectories_sent`` and ``lost``. Calls refused before they reached the proxy (connection
refused while it restarts) are retried, as SDKs do. The final line is one JSON object with
``rounds``, ``faults_by_kind``, ``trajectories_sent``, ``lost``, ``duplicated``, ``rewards_lost``,
``max_recovery_s`` and the targets.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import io
import json
import os
import random
import signal
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from app.config import DEFAULT_CONFIG, SluiceConfig, load_config
from app.up import running_stack
from infra.broker import free_port
from pipeline.demo.personas import PERSONAS, SECRETS, canaries
from pipeline.demo.summary import id_list, rows
from sinks.clients import connect_client
from sluice.events import scoped_trajectory_id

FAULTS = ("proxy", "stages", "sink", "model", "broker_pause", "broker_kill", "stack_restart", "stack_kill")
STACK_FAULTS = ("stack_restart", "stack_kill")  # end this `sluice up`; the next pass starts a new one
TARGETS = {
    "lost": 0,
    "abandoned_lost": 0,
    "duplicated": 0,
    "rewards_lost": 0,
    "canary_leaks": 0,
    "rounds_min": 20,
}
MODEL = "sluice-tiny"


@dataclass
class Trajectory:
    tid: str  # the id the agent sends
    sid: str  # the id it is stored under (scoped by the key's tenant)
    steps: list[str] = field(default_factory=list)  # the marker of every answered call (survives redaction)
    rewards: list[str] = field(default_factory=list)  # reward ids the proxy accepted
    complete: bool = False  # every call answered and the end accepted
    abandoned: bool = False  # a call got no answer; the agent then ends it as abandoned
    ended: bool = False  # the proxy accepted its end (complete, or abandoned and ended)


def chaos_config(tmp: Path) -> Path:
    """The embedded default on free ports, every file under ``tmp``."""
    data = yaml.safe_load(DEFAULT_CONFIG.read_text())
    model_port = free_port()
    data["broker"]["bootstrap_servers"] = f"127.0.0.1:{free_port()}"
    data["topics"]["partitions"] = 2
    data["proxy"]["port"] = free_port()
    data["proxy"]["backends"][0]["base_url"] = f"http://127.0.0.1:{model_port}/v1"
    data["proxy"]["spool_dir"] = str(tmp / "spool")
    data["stages"]["data_dir"] = str(tmp / "stages")
    data["stages"]["workers"] = 2
    data["sink"] = {**data.get("sink", {}), "database": str(tmp / "sluice.duckdb"), "query_port": free_port()}
    data["rewards"] = {**data["rewards"], "wait_s": 2}
    data["up"] = {
        **data.get("up", {}),
        "log_file": str(tmp / "logs" / "up.log"),
        "state_file": str(tmp / "up.json"),
        "restart_max_fast_failures": 8,
    }
    data.setdefault("trainer", {})["output_dir"] = str(tmp / "trainer")
    path = tmp / "sluice.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


# ----------------------------------------------------------------------------- agents


class Agents:
    """Concurrent agents: multi-step trajectories with explicit ids, rewards (some late), ends."""

    def __init__(self, root: str, key: str, tenant: str, count: int, seed: int) -> None:
        self.root, self.key, self.tenant, self.count = root, key, tenant, count
        self.rng = random.Random(seed)
        self.trajectories: list[Trajectory] = []
        self.late: list[asyncio.Task[None]] = []
        self.stop = asyncio.Event()

    async def _post(self, http: httpx.AsyncClient, path: str, body: dict, tid: str) -> httpx.Response | None:
        """POST, retrying while the proxy refuses connections (nothing reached it); None: no answer."""
        headers = {"Authorization": f"Bearer {self.key}", "x-sluice-trajectory-id": tid}
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                return await http.post(path, json=body, headers=headers)
            except httpx.ConnectError:
                await asyncio.sleep(0.2)
            except httpx.HTTPError:
                return None  # the request may have reached the proxy: the agent gives up on it
        return None

    async def trajectory(self, http: httpx.AsyncClient, tid: str, turns: int) -> Trajectory:
        traj = Trajectory(tid, scoped_trajectory_id(self.tenant, tid))
        self.trajectories.append(traj)
        persona = self.rng.choice(PERSONAS)
        messages: list[dict[str, Any]] = []
        for turn in range(turns):
            marker = f"[{tid} turn {turn}]"
            text = (
                f"{marker} I am {persona.name}, mail {persona.email}, phone {persona.phone}, "
                f"card {persona.card}; key {self.rng.choice(SECRETS)}. Say ok."
            )
            messages.append({"role": "user", "content": text})
            body = {"model": MODEL, "messages": messages, "max_tokens": 6, "stream": turn % 2 == 1}
            resp = await self._post(http, "/v1/chat/completions", body, tid)
            if resp is None or resp.status_code != 200 or (body["stream"] and b"[DONE]" not in resp.content):
                return await self.abandon(http, traj)
            traj.steps.append(marker)
            reply = "ok"
            if not body["stream"]:
                reply = resp.json()["choices"][0]["message"].get("content") or ""
            messages.append({"role": "assistant", "content": reply})
        roll = self.rng.random()
        if roll < 0.5:
            await self.reward(http, traj, "early")
        end = await self._post(http, f"/v1/trajectories/{tid}/end", {"outcome": "success"}, tid)
        if end is None or end.status_code != 202:
            return await self.abandon(http, traj)
        traj.complete = traj.ended = True
        if roll >= 0.5:  # late: after the join emitted the trajectory unrewarded (rewards.wait_s)
            self.late.append(asyncio.create_task(self._late_reward(traj, self.rng.uniform(4, 12))))
        return traj

    async def abandon(self, http: httpx.AsyncClient, traj: Trajectory) -> Trajectory:
        """A call got no answer (the model server or the proxy died under it): end the trajectory as
        abandoned, so that it is emitted and the steps it was answered for can be checked."""
        traj.abandoned = True
        end = await self._post(http, f"/v1/trajectories/{traj.tid}/end", {"outcome": "abandoned"}, traj.tid)
        traj.ended = end is not None and end.status_code == 202
        return traj

    async def reward(self, http: httpx.AsyncClient, traj: Trajectory, kind: str) -> None:
        rid = f"{traj.tid}-{kind}"
        body = {"value": 1.0, "name": "chaos", "id": rid, "source": "bench"}
        resp = await self._post(http, f"/v1/trajectories/{traj.tid}/rewards", body, traj.tid)
        if resp is not None and resp.status_code == 202:
            traj.rewards.append(rid)

    async def _late_reward(self, traj: Trajectory, after_s: float) -> None:
        await asyncio.sleep(after_s)
        async with httpx.AsyncClient(base_url=self.root, timeout=30) as http:
            await self.reward(http, traj, "late")

    async def run(self) -> None:
        async def agent(n: int) -> None:
            async with httpx.AsyncClient(base_url=self.root, timeout=30) as http:
                while not self.stop.is_set():
                    traj = await self.trajectory(
                        http, f"chaos-{n}-{uuid.uuid4().hex[:10]}", self.rng.randint(2, 4)
                    )
                    if traj.abandoned:
                        await asyncio.sleep(1.0)  # the model server (or the proxy) is down: try again soon

        await asyncio.gather(*(agent(n) for n in range(self.count)))
        await asyncio.gather(*self.late)

    async def probe(self) -> str | None:
        """One short trajectory; its id once the proxy accepted its end."""
        tid = f"probe-{uuid.uuid4().hex[:10]}"
        async with httpx.AsyncClient(base_url=self.root, timeout=30) as http:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                traj = await self.trajectory(http, tid, 1)
                if traj.complete:
                    return traj.sid
                tid = f"probe-{uuid.uuid4().hex[:10]}"
                await asyncio.sleep(0.5)
        return None


# ----------------------------------------------------------------------------- checks


def query(cfg: SluiceConfig, sql: str) -> list[dict[str, Any]]:
    client = connect_client(cfg.sink_settings(), None)
    try:
        return rows(client, sql)
    finally:
        client.close()


def try_query(cfg: SluiceConfig, sql: str) -> list[dict[str, Any]] | None:
    try:
        return query(cfg, sql)
    except Exception:  # noqa: BLE001 - the sink may be restarting: ask again later
        return None


def landed(cfg: SluiceConfig, ids: list[str]) -> set[str]:
    got = try_query(cfg, f"SELECT trajectory_id FROM trajectories WHERE trajectory_id IN ({id_list(ids)})")
    return {r["trajectory_id"] for r in got or []}


def verdict(cfg: SluiceConfig, sent: list[Trajectory]) -> dict[str, Any]:
    """``sent``: complete trajectories (every call answered) and abandoned ones the agent ended. A complete
    one must hold exactly its answered steps; an abandoned one each answered step exactly once (the call
    that got no answer may or may not have been recorded)."""
    ids = [t.sid for t in sent]
    latest = {
        r["trajectory_id"]: r
        for r in query(
            cfg, f"SELECT trajectory_id, step_count FROM trajectories WHERE trajectory_id IN ({id_list(ids)})"
        )
    }
    stored: dict[str, list[tuple[int, str]]] = collections.defaultdict(list)
    for r in query(
        cfg,
        "SELECT trajectory_id, step_index, CAST(record AS VARCHAR) AS record FROM store.steps "
        f"WHERE trajectory_id IN ({id_list(ids)})",
    ):
        stored[r["trajectory_id"]].append((r["step_index"], r["record"]))
    lost, abandoned_lost, duplicated, lost_ids = 0, 0, 0, []
    for t in sent:
        steps = stored.get(t.sid, [])
        indexes = collections.Counter(i for i, _ in steps)
        duplicated += sum(n - 1 for n in indexes.values() if n > 1)
        where = {marker: [i for i, rec in steps if marker in rec] for marker in t.steps}
        duplicated += sum(1 for found in where.values() if len(set(found)) > 1)
        if t.complete:
            ok = t.sid in latest and latest[t.sid]["step_count"] == len(t.steps)
            ok = ok and all(len(found) >= 1 for found in where.values()) and len(indexes) == len(t.steps)
        else:
            ok = t.sid in latest and latest[t.sid]["step_count"] >= len(t.steps)
            ok = ok and all(len(found) >= 1 for found in where.values())
        if not ok:
            lost += t.complete
            abandoned_lost += not t.complete
            lost_ids.append(t.sid)
    want_rewards = [r for t in sent for r in t.rewards]
    have = {r["reward_id"] for r in query(cfg, f"SELECT reward_id FROM rewards WHERE reward_id IN ({id_list(want_rewards)})")} if want_rewards else set()  # fmt: skip
    blob = repr([query(cfg, f"SELECT * FROM store.{t['table_name']}") for t in query(
        cfg, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'store'")])  # fmt: skip
    leaks = sorted({c for c in canaries() if c in blob})
    return {
        "lost": lost,
        "abandoned_lost": abandoned_lost,
        "lost_ids": lost_ids[:10],
        "duplicated": duplicated,
        "rewards_sent": len(want_rewards),
        "rewards_lost": len(set(want_rewards) - have),
        "rewards_lost_ids": sorted(set(want_rewards) - have)[:10],
        "canary_leaks": len(leaks),
    }


# ----------------------------------------------------------------------------- faults


def inject(sup: Any, kind: str, rng: random.Random) -> float:
    """Cause the fault; returns the monotonic time recovery is measured from."""
    if kind == "broker_pause":
        sup.signal("broker", signal.SIGSTOP)
        time.sleep(rng.uniform(2, 8))
        sup.signal("broker", signal.SIGCONT)
        return time.monotonic()
    if kind == "stages":
        name = rng.choice([n for n in sup.names() if n.startswith("stages")])
    else:
        name = {"broker_kill": "broker"}.get(kind, kind)
    os.kill(sup.pid(name), signal.SIGKILL)
    return time.monotonic()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--agents", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gap-s", type=float, default=4.0, help="Traffic between rounds (after recovery).")
    ap.add_argument("--land-timeout-s", type=float, default=300.0)
    ap.add_argument(
        "--faults", nargs="+", choices=FAULTS, default=list(FAULTS), help="Fault kinds to draw from."
    )
    args = ap.parse_args()
    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="bench-chaos-"))
    path = chaos_config(tmp)
    cfg = load_config(path)
    key, tenant = next((k.key.get_secret_value(), k.tenant) for k in cfg.proxy.api_keys)
    root = f"http://{cfg.proxy.host}:{cfg.proxy.port}"
    log = io.StringIO()
    faults: collections.Counter[str] = collections.Counter()
    recovery: list[float] = []
    unrecovered = 0
    restart_since: float | None = None
    restart_kind = "stack_restart"

    def record_recovery(since: float, label: str) -> None:
        """Send a probe trajectory; recovery is from ``since`` until it is queryable in DuckDB."""
        nonlocal unrecovered
        tid = asyncio.run_coroutine_threadsafe(agents.probe(), loop).result(300)
        deadline = time.monotonic() + 180
        while tid is not None and time.monotonic() < deadline and not landed(cfg, [tid]):
            time.sleep(0.5)
        if tid is not None and landed(cfg, [tid]):
            recovery.append(time.monotonic() - since)
        else:
            unrecovered += 1
        print(f"{label}, recovered in {recovery[-1] if recovery else -1:.1f}s", flush=True)

    t_start = time.monotonic()
    loop = asyncio.new_event_loop()
    agents = Agents(root, key, tenant, args.agents, args.seed)
    traffic = threading.Thread(target=lambda: loop.run_until_complete(agents.run()), daemon=True)
    restarts: collections.Counter[str] = collections.Counter()
    failure: list[BaseException] = []
    done_rounds = 0
    last_stack = False
    while not last_stack:
        # one `sluice up` per pass: a stack_restart fault stops it cleanly and the next pass starts
        # a new one on the same files, while the agents keep calling (refused connections are retried)
        with running_stack(cfg, path, log_path=tmp / "logs" / "up.log", sink=log) as sup:
            stop = threading.Event()

            def supervise(sup: Any = sup, stop: threading.Event = stop) -> None:
                try:
                    sup.supervise(stop, 0.2)
                except BaseException as err:  # noqa: BLE001 - reported in the result
                    failure.append(err)

            watcher = threading.Thread(target=supervise, daemon=True)
            watcher.start()
            if not traffic.is_alive():
                traffic.start()
            restarting_at: float | None = None
            if restart_since is not None:
                restarting_at, restart_since = restart_since, None
                record_recovery(restarting_at, f"round {done_rounds}: {restart_kind}")
            try:
                while done_rounds < args.rounds and not failure:
                    time.sleep(args.gap_s)
                    kind = rng.choice(args.faults)
                    faults[kind] += 1
                    done_rounds += 1
                    if kind in STACK_FAULTS:
                        if kind == "stack_kill":  # the supervisor must not restart what is killed
                            stop.set()
                            watcher.join(10)
                            for name in sup.names():
                                sup.kill(name)
                        restart_since, restart_kind = time.monotonic(), kind
                        how = "clean stop" if kind == "stack_restart" else "every service SIGKILLed"
                        print(f"round {done_rounds}: {kind} ({how}, new stack)", flush=True)
                        break
                    record_recovery(inject(sup, kind, rng), f"round {done_rounds}: {kind}")
                else:
                    last_stack = True
                if last_stack:
                    loop.call_soon_threadsafe(agents.stop.set)
                    traffic.join(300)
                    sent = [t for t in agents.trajectories if t.ended]
                    deadline = time.monotonic() + args.land_timeout_s
                    ids = [t.sid for t in sent]
                    while time.monotonic() < deadline and len(landed(cfg, ids)) < len(ids):
                        time.sleep(1.0)
                    time.sleep(5.0)  # late-reward versions
                    result = verdict(cfg, sent)
            finally:
                stop.set()
                watcher.join(10)
                restarts.update(sup.restarts())
                if not last_stack and failure:
                    last_stack = True
                    loop.call_soon_threadsafe(agents.stop.set)
                    traffic.join(300)
                    sent = [t for t in agents.trajectories if t.ended]
                    result = verdict(cfg, sent)
    summary = {
        "bench": "chaos",
        "rounds": sum(faults.values()),
        "faults_by_kind": dict(sorted(faults.items())),
        "trajectories_sent": sum(1 for t in sent if t.complete),
        "trajectories_abandoned": sum(1 for t in agents.trajectories if t.abandoned),
        "abandoned_checked": sum(1 for t in sent if not t.complete),
        "abandoned_lost": result["abandoned_lost"],
        "lost": result["lost"],
        "duplicated": result["duplicated"],
        "rewards_sent": result["rewards_sent"],
        "rewards_lost": result["rewards_lost"],
        "canary_leaks": result["canary_leaks"],
        "max_recovery_s": round(max(recovery), 2) if recovery else None,
        "median_recovery_s": round(sorted(recovery)[len(recovery) // 2], 2) if recovery else None,
        "rounds_not_recovered": unrecovered,
        "restarts": dict(restarts),
        "supervisor_gave_up": str(failure[0])[:200] if failure else None,
        "lost_ids": result["lost_ids"],
        "rewards_lost_ids": result["rewards_lost_ids"],
        "wall_s": round(time.monotonic() - t_start, 1),
        "log": str(tmp / "logs" / "up.log"),
        "targets": TARGETS,
    }
    summary["met"] = all(
        summary[k] == 0 for k in ("lost", "abandoned_lost", "duplicated", "rewards_lost", "canary_leaks")
    ) and (summary["rounds"] >= TARGETS["rounds_min"] and not unrecovered)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
