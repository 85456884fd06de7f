"""A canary through the whole pipeline: publisher -> proxy -> backend -> stages -> sink -> DuckDB.

Real broker, real proxy (in this process), a real recording backend, a real ``sluice stages`` worker
(Presidio and the reward join) and a real ``sluice sink``. A ledger entry and a canary assignment are
published; scripted trajectories go through the proxy with rewards; DuckDB then attributes every step
to its overlay and arm, ``overlay_outcomes`` counts each arm's trajectories and rewards, the ledger
holds each entry once, and a tenant's key sees only its own ledger and outcomes.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from app.config import load_config
from infra.broker import LocalBroker, free_port
from pipeline.demo.summary import id_list, rows, wait_until
from pipeline.evolve.publish import EvolutionPublisher
from pipeline.proxy.control.overlay_routing import share_point
from pipeline.topics import create_topics
from sinks.clients import connect_client
from sluice.events import scoped_trajectory_id
from sluice.evolution import LedgerEntry, MemoryEntry, Overlay, OverlayAssignment
from tests.pipeline.proxy.conftest import BACKEND_KEY, KEY, KEY_GLOBEX, proxy_section, serve
from tests.pipeline.proxy.recording_backend import recording_backend
from tests.pipeline.stages.stage_helpers import StageWorker
from tests.sinks.helpers import SinkProcess

pytestmark = pytest.mark.slow

TRAJECTORIES = 10


def stack_data(broker: LocalBroker, tmp: Path, backend_url: str) -> dict[str, Any]:
    return {
        "broker": {"bootstrap_servers": broker.bootstrap_servers, "profile": "tansu", "embedded": False},
        "topics": {"prefix": f"t{uuid.uuid4().hex[:10]}.", "partitions": 2},
        "proxy": proxy_section(backend_url, tmp),
        "stages": {"data_dir": str(tmp / "stages"), "stats_interval_s": 5},
        "sink": {
            "database": str(tmp / "sluice.duckdb"),
            "query_port": free_port(),
            "batch_max_wait_s": 0.2,
            "admin_key_file": str(tmp / "admin.key"),
        },
        "rewards": {"required": ["score"], "wait_s": 3, "idle_end_s": 60, "tick_s": 0.5},
        "eligibility": {"tenants": {"acme": {"training_opt_in": True}}},
        "up": {"local_model_backend": None},
    }


def publish(pub: EvolutionPublisher, assignment: OverlayAssignment) -> LedgerEntry:
    entry = LedgerEntry(
        proposal_id=f"pr-{assignment.tenant}",
        kind="canary",
        surface="memory",
        tenant=assignment.tenant,
        overlay_id=assignment.candidate.overlay_id if assignment.candidate else None,
        evidence={"query": "SELECT 1", "numbers": {"share": assignment.canary_share}},
    )
    pub.record(entry)
    pub.record(entry)  # a retried publish: the ledger still holds it once
    pub.assign(assignment.model_copy(update={"ledger_entry_id": entry.entry_id}))
    return entry


def run_trajectory(client: httpx.Client, key: str, tid: str, reward: float, turns: int = 2) -> None:
    headers = {"authorization": f"Bearer {key}", "x-sluice-trajectory-id": tid}
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You help."}]
    for turn in range(turns):
        messages.append({"role": "user", "content": f"turn {turn} of [{tid}]"})
        resp = client.post(
            "/v1/chat/completions", json={"model": "echo-1", "messages": messages}, headers=headers
        )
        assert resp.status_code == 200, resp.text
        messages.append(resp.json()["choices"][0]["message"])
    score = {"name": "score", "value": reward}
    assert client.post(f"/v1/trajectories/{tid}/rewards", json=score, headers=headers).status_code == 202
    assert client.post(f"/v1/trajectories/{tid}/end", json={}, headers=headers).status_code == 202


def test_canary_outcomes_and_ledger_land_in_duckdb(broker: LocalBroker, tmp_path: Path) -> None:
    with recording_backend(BACKEND_KEY) as (url, backend):
        path = tmp_path / "sluice.yaml"
        path.write_text(yaml.safe_dump(stack_data(broker, tmp_path, url)))
        cfg = load_config(path)
        create_topics(cfg.broker, cfg.topics)
        worker = StageWorker(path, tmp_path / "stages.log")
        sink = SinkProcess(path, cfg)
        try:
            worker.start()
            sink.wait_ready()
            with serve(cfg) as proxy:
                control = Overlay(tenant="acme", memory=[MemoryEntry(text="CONTROL FACT")])
                candidate = Overlay(tenant="acme", memory=[MemoryEntry(text="CANDIDATE FACT")])
                globex = Overlay(tenant="globex", memory=[MemoryEntry(text="GLOBEX FACT")])
                canary = OverlayAssignment(
                    tenant="acme", active=control, candidate=candidate, canary_share=0.5
                )
                with EvolutionPublisher(cfg.broker, cfg.topics) as pub:
                    acme_entry = publish(pub, canary)
                    publish(pub, OverlayAssignment(tenant="globex", active=globex))
                state = proxy.app.state.sluice
                wait_until(
                    lambda: {"acme/*", "globex/*"} <= set(state.overlays), 20, "the proxy to read both"
                )

                ids = [f"run-{i}" for i in range(TRAJECTORIES)]
                arm = {
                    t: "candidate" if share_point(scoped_trajectory_id("acme", t)) < 0.5 else "control"
                    for t in ids
                }
                assert set(arm.values()) == {"candidate", "control"}
                with httpx.Client(base_url=proxy.url, timeout=30) as client:
                    for tid in ids:  # the test's grader: the candidate arm succeeds, the control does not
                        run_trajectory(client, KEY, tid, 1.0 if arm[tid] == "candidate" else 0.0)
                    run_trajectory(client, KEY_GLOBEX, "g-0", 0.5, turns=1)
                for tid in ids:
                    fact = "CANDIDATE FACT" if arm[tid] == "candidate" else "CONTROL FACT"
                    for turn in range(2):
                        (got,) = backend.received(f"turn {turn} of [{tid}]")
                        assert fact in got["messages"][0]["content"], (tid, turn)

                scoped = [scoped_trajectory_id("acme", t) for t in ids]
                admin = connect_client(cfg.sink_settings(), None)
                try:
                    wait_until(
                        lambda: (
                            rows(admin, "SELECT sum(trajectories) AS n FROM overlay_outcomes")[0]["n"]
                            == TRAJECTORIES + 1
                        ),
                        120,
                        "every trajectory in overlay_outcomes",
                    )
                    steps = rows(
                        admin,
                        "SELECT trajectory_id, step_index, overlay_id, overlay_arm, redaction FROM steps "
                        f"WHERE trajectory_id IN ({id_list(scoped)}) ORDER BY 1, 2",
                    )
                    assert len(steps) == 2 * TRAJECTORIES
                    for s in steps:
                        a = arm[s["trajectory_id"].split("~", 1)[1]]
                        want = candidate.overlay_id if a == "candidate" else control.overlay_id
                        assert (s["overlay_id"], s["overlay_arm"], s["redaction"]) == (want, a, "redacted")
                    outcomes = rows(
                        admin,
                        "SELECT tenant, overlay_id, overlay_arm, trajectories, rewarded, mean_reward "
                        "FROM overlay_outcomes ORDER BY tenant, overlay_arm",
                    )
                    n_cand = sum(a == "candidate" for a in arm.values())
                    assert outcomes == [
                        {
                            "tenant": "acme",
                            "overlay_id": candidate.overlay_id,
                            "overlay_arm": "candidate",
                            "trajectories": n_cand,
                            "rewarded": n_cand,
                            "mean_reward": 1.0,
                        },
                        {
                            "tenant": "acme",
                            "overlay_id": control.overlay_id,
                            "overlay_arm": "control",
                            "trajectories": TRAJECTORIES - n_cand,
                            "rewarded": TRAJECTORIES - n_cand,
                            "mean_reward": 0.0,
                        },
                        {
                            "tenant": "globex",
                            "overlay_id": globex.overlay_id,
                            "overlay_arm": "control",
                            "trajectories": 1,
                            "rewarded": 1,
                            "mean_reward": 0.5,
                        },
                    ]
                    ledger = rows(admin, "SELECT entry_id, tenant FROM evolution_ledger ORDER BY tenant")
                    assert [r["tenant"] for r in ledger] == ["acme", "globex"]  # each entry once
                finally:
                    admin.close()
                tenant = connect_client(cfg.sink_settings(), KEY)
                try:
                    assert rows(tenant, "SELECT DISTINCT tenant FROM overlay_outcomes") == [
                        {"tenant": "acme"}
                    ]
                    assert rows(tenant, "SELECT entry_id FROM evolution_ledger") == [
                        {"entry_id": acme_entry.entry_id}
                    ]
                finally:
                    tenant.close()
        finally:
            assert sink.stop() == 0, sink.output()
            worker.stop()
