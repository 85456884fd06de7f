"""Weights earn their traffic, through the whole real stack: broker, tiny-model policy server holding the
promoted version and the trainer's candidates at once, proxy, stage workers, DuckDB sink, `sluice train`
in live mode with ``trainer.promotion: gated`` as its own process, and the control plane's passes.

* Live traffic trains v1; the trainer records its lineage and pushes it as a candidate: the server keeps
  it beside the default, and every live answer until the gates pass it comes from the promoted version.
* The gates (replay, shadow, offline) pass it and start a canary: the proxy sends the candidate arm's
  trajectories to it by name. Rewarded worse than control (the posted rewards decide here; the grader's
  reading of the arms is tested with the control plane), it is rolled back by the loop itself and
  discarded from the server; the trainer starts again from the promoted version.
* A later candidate wins its canary and is promoted: the scope's assignment serves it to every pooled
  tenant by name (the server's default stays the base).
* Every decision has its ledger entry, and ``policy_lineage`` names the trajectories each version
  trained on.
"""

from __future__ import annotations

import io
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from app.config import SluiceConfig, load_config
from app.up import running_stack
from pipeline.demo.summary import rows, wait_until
from pipeline.evolve.ledger_state import proposal_states, read_ledger
from pipeline.evolve.runner import EvolveRunner
from pipeline.evolve.wiring import open_runner
from sinks.clients import connect_client
from sluice.events import scoped_trajectory_id
from tests.system.conftest import live_trainer_config

pytestmark = pytest.mark.slow
KEY, TENANT, TASK = "sk-sluice-acme", "acme", "say-yes"
PROMPT = "Say yes."


def _config(tmp: Path) -> Path:
    path = live_trainer_config(
        tmp, trainer={"promotion": "gated", "max_staleness": 8}, live={"group_wait_s": 3}
    )
    data = yaml.safe_load(path.read_text())
    # the task's grader: the tiny model's answers are graded by the same regex whatever version gave them
    data["evolve"] = {
        "graders": {"*": {"kind": "traffic", "reward": {"kind": "regex", "pattern": "^$"}}},
        "eval": {"max_tokens": 4, "concurrency": 2},
        "shadow": {"max_prompts": 4, "min_prompts": 2},
        "offline": {"held_out": 2, "probe_samples": 1},
        "canary": {
            "share": 0.5,
            "weights_reward": "posted",
            "test": {"min_per_arm": 3, "tune_n": 6, "alpha": 0.2},
        },
        "limits": {"min_evidence": 2, "cooldown_after_rollback_s": 0},
    }
    path.write_text(yaml.safe_dump(data))
    return path


class Traffic:
    """One-call trajectories of the agent through the proxy, each ended with a posted reward."""

    def __init__(self, proxy: str) -> None:
        self.proxy, self.http = proxy, httpx.Client(timeout=60)
        self.served: dict[str, str] = {}  # trajectory id -> the policy version that answered

    def run(self, n: int, reward: Any = 0.5, prefix: str = "t") -> list[str]:
        ids = []
        for i in range(n):
            tid = f"{prefix}-{uuid.uuid4().hex[:8]}"
            headers = {
                "authorization": f"Bearer {KEY}",
                "x-sluice-trajectory-id": tid,
                "x-sluice-task-id": TASK,
            }
            body = {"model": "sluice-tiny", "messages": [{"role": "user", "content": PROMPT}], "max_tokens": 4,
                    "temperature": 1.0}  # fmt: skip
            resp = self.http.post(f"{self.proxy}/v1/chat/completions", json=body, headers=headers)
            assert resp.status_code == 200, resp.text
            self.served[tid] = resp.headers.get("x-sluice-policy-version", "")
            value = reward(self.served[tid]) if callable(reward) else (1.0 if i % 2 else 0.0)
            auth = {"authorization": f"Bearer {KEY}"}
            r = self.http.post(f"{self.proxy}/v1/trajectories/{tid}/rewards", headers=auth,
                               json={"name": "score", "value": value})  # fmt: skip
            assert r.status_code < 300, r.text
            r = self.http.post(
                f"{self.proxy}/v1/trajectories/{tid}/end", headers=auth, json={"outcome": "done"}
            )
            assert r.status_code < 300, r.text
            ids.append(tid)
        return ids


def _policy(http: httpx.Client, model: str) -> dict[str, Any]:
    return http.get(f"{model}/v1/policy").json()


def _passes(runner: EvolveRunner, until: Any, timeout_s: float, what: str, traffic: Any = None) -> None:
    """Run control-plane passes (sending ``traffic()`` between them) until ``until()`` holds."""

    def step() -> bool:
        if traffic is not None:
            traffic()
        runner.run_pass()
        return bool(until())

    wait_until(step, timeout_s, what, poll_s=1.0)


def test_a_trained_version_serves_only_after_the_gates_and_is_rolled_back_or_promoted(tmp_path: Path) -> None:
    path = _config(tmp_path)
    cfg: SluiceConfig = load_config(path)
    proxy = f"http://{cfg.proxy.host}:{cfg.proxy.port}"
    model = cfg.trainer.policy_servers[0]
    log = io.StringIO()
    with (
        running_stack(cfg, path, with_trainer=True, log_path=tmp_path / "up.log", sink=log),
        httpx.Client(timeout=30) as http,
        open_runner(cfg.evolve_settings(), actor="test") as runner,
    ):
        traffic = Traffic(proxy)
        first = traffic.run(8, prefix="warm")

        def kept() -> list[str]:
            return [v["version"] for v in _policy(http, model)["kept"]]

        wait_until(lambda: "1" in kept(), 180, "the trainer's candidate v1 on the policy server")
        assert _policy(http, model)["serving_version"] == "0"  # a candidate: not the default
        later = traffic.run(4, prefix="before-gates")  # v1 is kept, but no live request names it yet
        assert {traffic.served[t] for t in [*first, *later]} == {"0"}

        def states() -> dict[str, Any]:
            return {
                s.proposal.policy_version: s
                for s in proposal_states(read_ledger(cfg.broker, cfg.topics, 15)).values()
                if s.proposal.surface == "weights"
            }

        # the candidate's proposal and lineage are in the ledger before any gate looked at it
        wait_until(lambda: "1" in states(), 60, "the weights proposal of v1 in the ledger")
        lineage = states()["1"].proposal.lineage
        assert lineage is not None and lineage.parent == "0" and lineage.samples >= 4
        assert {i.trajectory_id for i in lineage.items} <= {scoped_trajectory_id(TENANT, t) for t in first}

        # replay, shadow and offline pass v1 (the newest candidate then); its canary starts
        def gated() -> list[Any]:
            return [s for s in states().values() if s.status not in ("pending", "set_aside")]

        _passes(runner, gated, 240, "a candidate through replay, shadow and offline")
        first_canary = gated()[0]
        v_lose = first_canary.proposal.policy_version
        gates = [e.gate for e in first_canary.entries if e.kind == "gate"]
        assert gates[:3] == ["replay", "shadow", "offline"], [
            (e.gate, e.summary) for e in first_canary.entries
        ]
        assert first_canary.status == "canary"
        assert all(served == "0" for served in traffic.served.values())  # nothing served it before this

        # its arm is graded worse than control: the loop rolls it back and the server lets it go
        def lose() -> None:
            traffic.run(4, reward=lambda served: 0.0 if served == v_lose else 1.0, prefix="canary-a")

        _passes(runner, lambda: states()[v_lose].status == "rolled_back", 300, f"v{v_lose} rolled back", lose)
        assert v_lose in set(traffic.served.values())  # the canary arm really was served by the candidate
        wait_until(lambda: v_lose not in kept(), 30, f"v{v_lose} discarded from the policy server")
        assert _policy(http, model)["serving_version"] == "0"

        # a later candidate wins its canary: promoted, the server's default and the assignment's policy
        def promoted() -> list[str]:
            return [v for v, s in states().items() if s.status == "promoted"]

        def win() -> None:
            canary = next((s for s in states().values() if s.status == "canary"), None)
            v_win = canary.proposal.policy_version if canary else None
            traffic.run(4, reward=lambda served: 1.0 if served == v_win else 0.0, prefix="canary-b")

        _passes(runner, promoted, 420, "a winning candidate promoted", win)
        v_win = promoted()[0]
        assignment = runner.pub.read_assignments(15)["*/*"]
        assert assignment.active_policy == v_win and assignment.candidate_policy is None
        # served by its assignment, by name; the server's default stays the base
        wait_until(lambda: set(traffic.served[t] for t in traffic.run(2, prefix="after")) == {v_win}, 60,
                   f"v{v_win} answering the pooled tenants")  # fmt: skip
        assert _policy(http, model)["serving_version"] == "0"

        # every decision has its ledger entry, in order; lineage rows name the trajectories
        s_win = states()[v_win]
        kinds = [(e.kind, e.gate or e.decision) for e in s_win.entries]
        assert kinds[0] == ("proposal", None) and ("canary", "start") in kinds and kinds[-1][0] == "promotion"
        rolled = [(e.kind, e.decision) for e in states()[v_lose].entries]
        assert rolled[-1][0] == "rollback"
        skipped = [s for s in states().values() if s.status == "set_aside"]
        assert all(e.summary.startswith("stale") for s in skipped for e in s.entries if e.decision == "skip")
        client = connect_client(cfg.sink_settings(), None)
        try:
            sql = f"SELECT DISTINCT trajectory_id FROM policy_lineage WHERE policy_version = '{v_win}'"
            wait_until(lambda: len(rows(client, sql)) >= 1, 60, f"v{v_win}'s lineage rows in DuckDB")
            names = {r["trajectory_id"] for r in rows(client, sql)}
            assert names == {i.trajectory_id for i in s_win.proposal.lineage.items}
            assert all(n.startswith(f"{TENANT}~") for n in names)
        finally:
            client.close()
