"""The control plane through the whole real stack (embedded broker, proxy, stages, sink, DuckDB) with a
real OpenAI-compatible backend: a memory entry that passes the shadow evaluation and the offline
regression goes to canary, loses to control on live rewards, and is rolled back by the loop itself;
every decision is in the ledger, and `sluice evolve explain` tells it from the ledger view.

The planted change: the agent's promo-code questions fail (the system prompt lacks the code). The
diagnosed fix adds "The promo code is SUNNY24." as a memory entry, which the recorded rewards confirm.
By the time it reaches canary the code has changed to WINTER25: the live checker gives 1 for the new
code, 0.5 for an honest "I am not sure." and 0 for a confidently wrong code, so the candidate loses.
"""

from __future__ import annotations

import io
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from click.testing import CliRunner

from app.cli import cli as sluice_cli
from app.config import SluiceConfig, load_config
from app.up import running_stack
from governance.evolve.overlay_apply import MEMORY_HEADER
from pipeline.demo.summary import id_list, landed, rows, wait_until
from pipeline.evolve.ledger_state import proposal_states, read_ledger
from pipeline.evolve.publish import EvolutionPublisher
from pipeline.evolve.wiring import open_runner
from sinks.clients import connect_client
from sluice.events import scoped_trajectory_id
from sluice.evolution import FailureCluster, LedgerEntry, MemoryEntry, Overlay, Proposal, scope_key
from tests.pipeline.evolve.scripted_backend import ScriptedBackend
from tests.system.conftest import stack_config

TENANT, KEY, TASK, MODEL = "acme", "sk-sluice-acme", "promo", "scripted"
SYSTEM = "You are Acme's support assistant.\nAnswer with the value only."
ASK = ["What is the promo code?", "Tell me the promo code.", "Which promo code works today?"]


class Agent:
    """Sends one-question trajectories through the proxy and posts the checker's reward for each."""

    def __init__(self, root: str) -> None:
        self.root, self.http = root, httpx.Client(timeout=60)

    def trajectory(self, tid: str, question: str, grade) -> str:  # noqa: ANN001
        headers = {"authorization": f"Bearer {KEY}", "x-sluice-trajectory-id": tid, "x-sluice-task-id": TASK}
        body = {
            "model": MODEL,
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}],
            "max_tokens": 16,
            "temperature": 0.0,
        }
        resp = self.http.post(f"{self.root}/v1/chat/completions", json=body, headers=headers)
        resp.raise_for_status()
        reply = resp.json()["choices"][0]["message"]["content"]
        auth = {"authorization": f"Bearer {KEY}"}
        r = self.http.post(
            f"{self.root}/v1/trajectories/{tid}/rewards",
            headers=auth,
            json={"name": "checker", "value": grade(reply)},
        )
        r.raise_for_status()
        self.http.post(f"{self.root}/v1/trajectories/{tid}/end", headers=auth, json={"outcome": "answered"})
        return reply

    def close(self) -> None:
        self.http.close()


def old_checker(reply: str) -> float:
    return 1.0 if "SUNNY24" in reply else 0.0


def live_checker(reply: str) -> float:
    if "WINTER25" in reply:
        return 1.0
    return 0.0 if re.search(r"[A-Z]{4,}\d{2}", reply) else 0.5


class EvolveStack:
    def __init__(self, cfg: SluiceConfig, path: Path, backend: ScriptedBackend, log: io.StringIO) -> None:
        self.cfg, self.path, self.backend, self.log = cfg, path, backend, log
        self.agent = Agent(f"http://{cfg.proxy.host}:{cfg.proxy.port}")

    def query(self, sql: str) -> list[dict]:
        client = connect_client(self.cfg.sink_settings(), None)
        try:
            return rows(client, sql)
        finally:
            client.close()

    def wait_rewarded(self, local_ids: list[str], timeout_s: float = 180) -> list[str]:
        ids = [scoped_trajectory_id(TENANT, i) for i in local_ids]
        client = connect_client(self.cfg.sink_settings(), None)
        sql = f"SELECT count(*) AS n FROM trajectories WHERE rewarded AND trajectory_id IN ({id_list(ids)})"
        try:
            wait_until(lambda: landed(client, ids) and rows(client, sql)[0]["n"] == len(ids), timeout_s,
                       f"{len(ids)} rewarded trajectories")  # fmt: skip
        except TimeoutError as err:
            raise AssertionError(f"{err}\n{self.log.getvalue()[-4000:]}") from None
        finally:
            client.close()
        return ids


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EvolveStack]:
    tmp = tmp_path_factory.mktemp("evolve-stack")
    with ScriptedBackend() as backend:
        path = stack_config(tmp)
        data = yaml.safe_load(path.read_text())
        data["proxy"]["backends"] = [
            {"name": "scripted", "base_url": backend.base_url, "models": [MODEL], "model_version": "s1"}
        ]
        data["up"]["local_model_backend"] = None
        data["stages"]["workers"] = 1
        data["evolve"] = {
            "graders": {TASK: {"reward": {"kind": "regex", "pattern": "SUNNY24"}}},
            "limits": {"min_evidence": 4, "max_canaries": 1},
            "shadow": {"min_prompts": 4, "margin": 0.5},
            "canary": {"share": 0.5, "test": {"alpha": 0.05, "tune_n": 40, "min_per_arm": 20}},
        }
        path.write_text(yaml.safe_dump(data))
        cfg = load_config(path)
        log = io.StringIO()
        with running_stack(cfg, path, log_path=tmp / "logs" / "up.log", sink=log):
            s = EvolveStack(cfg, path, backend, log)
            try:
                yield s
            finally:
                s.agent.close()


def test_a_canary_that_loses_to_control_rolls_back_by_itself(stack: EvolveStack) -> None:
    run = uuid.uuid4().hex[:6]
    # 1. recorded traffic: the promo-code questions fail under the bare agent
    recorded = [f"rec-{run}-{i}" for i in range(8)]
    for i, tid in enumerate(recorded):
        assert stack.agent.trajectory(tid, ASK[i % len(ASK)], old_checker) == "I am not sure."
    cluster_ids = stack.wait_rewarded(recorded)
    grades = stack.query(
        f"SELECT replay_grade FROM trajectories WHERE trajectory_id IN ({id_list(cluster_ids)})"
    )
    assert {g["replay_grade"] for g in grades} <= {"deterministic", "approximate"}

    # 2. the diagnosed proposal, recorded in the ledger
    candidate = Overlay(tenant=TENANT, task_id=TASK, memory=[MemoryEntry(text="The promo code is SUNNY24.")])
    cluster = FailureCluster(
        tenant=TENANT, task_id=TASK, signal="reward", trajectories=8, failures=8, mean_reward=0.0,
        sample_trajectory_ids=cluster_ids, surface="memory", reason="the agent lacks the promo code",
    )  # fmt: skip
    p = Proposal(surface="memory", tenant=TENANT, task_id=TASK, cluster=cluster, candidate=candidate,
                 rationale="add the promo code as a memory entry", proposer="missing_fact")  # fmt: skip
    with EvolutionPublisher(stack.cfg.broker, stack.cfg.topics) as pub:
        pub.record(LedgerEntry(proposal_id=p.proposal_id, kind="proposal", surface="memory", tenant=TENANT,
                               task_id=TASK, summary=p.rationale, diff={"proposal": p.model_dump(mode="json")}))  # fmt: skip

    # 3. one pass: replay, shadow and offline pass; the canary starts
    with open_runner(stack.cfg.evolve_settings()) as runner:
        first = runner.run_pass()
    assert [(a.proposal_id, a.what) for a in first.actions] == [(p.proposal_id, "canary")], first

    # 4. live traffic: the code changed; the proxy routes half the trajectories to the candidate
    # (once it has read the assignment: until then trajectories carry no arm and the canary ignores them)
    warm = iter(range(10_000))

    def proxy_applies_it() -> bool:
        seen = len(stack.backend.requests)
        for _ in range(4):
            stack.agent.trajectory(f"warm-{run}-{next(warm)}", ASK[0], live_checker)
        return any(MEMORY_HEADER in b["messages"][0]["content"] for b in stack.backend.requests[seen:])

    wait_until(proxy_applies_it, 60, "the proxy to apply the canary's assignment")
    seen_before = len(stack.backend.requests)
    live = [f"live-{run}-{i}" for i in range(160)]
    for i, tid in enumerate(live):
        stack.agent.trajectory(tid, ASK[i % len(ASK)], live_checker)
    overlaid = [
        b for b in stack.backend.requests[seen_before:] if MEMORY_HEADER in b["messages"][0]["content"]
    ]
    assert 40 <= len(overlaid) <= 120  # the candidate arm got about half
    live_ids = stack.wait_rewarded(live)
    arms = stack.query(
        f"SELECT overlay_arm, overlay_id, count(*) AS n FROM steps WHERE trajectory_id IN ({id_list(live_ids)}) "
        "GROUP BY ALL ORDER BY overlay_arm"
    )
    assert {(a["overlay_arm"], a["overlay_id"]) for a in arms} == {
        ("candidate", candidate.overlay_id),
        ("control", None),
    }

    # 5. the next pass reads the arms, and the sequential test rolls the candidate back
    with open_runner(stack.cfg.evolve_settings()) as runner:
        second = runner.run_pass()
    assert [(a.proposal_id, a.what) for a in second.actions] == [(p.proposal_id, "rollback")], second
    with EvolutionPublisher(stack.cfg.broker, stack.cfg.topics) as pub:
        after = pub.read_assignments()[scope_key(TENANT, TASK)]
    assert after.candidate is None and after.active is None

    # every decision is a ledger entry, and each assignment names the entry recorded before it
    entries = [e for e in read_ledger(stack.cfg.broker, stack.cfg.topics) if e.proposal_id == p.proposal_id]
    assert [(e.kind, e.gate, e.decision) for e in entries] == [
        ("proposal", None, None), ("gate", "replay", "pass"), ("gate", "shadow", "pass"),
        ("gate", "offline", "pass"), ("canary", None, "start"), ("gate", "canary", "rollback"),
        ("rollback", None, "rollback"),
    ]  # fmt: skip
    assert after.ledger_entry_id == entries[-1].entry_id
    assert proposal_states(entries)[p.proposal_id].status == "rolled_back"
    canary = entries[-2].evidence["numbers"]["reward"]
    assert canary["candidate_mean"] < canary["control_mean"] and canary["upper"] < 0

    # after the rollback every trajectory is served by control again
    seen = len(stack.backend.requests)
    for i in range(6):
        stack.agent.trajectory(f"after-{run}-{i}", ASK[0], live_checker)
    assert not [b for b in stack.backend.requests[seen:] if MEMORY_HEADER in b["messages"][0]["content"]]

    # 6. explain reads the sink's ledger view
    client = connect_client(stack.cfg.sink_settings(), None)
    try:
        wait_until(lambda: rows(client, f"SELECT count(*) AS n FROM evolution_ledger WHERE proposal_id = "
                                        f"'{p.proposal_id}'")[0]["n"] == len(entries), 60, "ledger in DuckDB")  # fmt: skip
    finally:
        client.close()
    out = CliRunner().invoke(sluice_cli, ["evolve", "explain", p.proposal_id, "--config", str(stack.path)])
    assert out.exit_code == 0, out.output
    for needle in ("[shadow] passed", "[offline] passed", "-> rollback", "The promo code is SUNNY24."):
        assert needle in out.output, out.output
