"""``GET /v1/trajectories/{id}`` and ``GET /v1/trajectories`` on a live proxy over the real broker, with
the sink's own writer putting a landed version into a real DuckDB store: a trajectory is pending from
its first step until the store has it, then landed with its versions and rewards; an unknown id and
another tenant's id are the same 404; with ``rewards_before_steps: false`` a reward for an id the
tenant never used is a 404 and nothing is published."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from app.config import SluiceConfig
from infra.broker import LocalBroker
from pipeline.topics import create_topics
from sinks.batch import BatchTopics, PendingBatch
from sinks.flatten import SourceRecord
from sinks.store import DuckDBStore
from sluice.events import RewardEvent, encode
from testing.samples import make_trajectory
from tests.conftest import make_config
from tests.kafka_helpers import read_topic
from tests.pipeline.proxy.conftest import KEY, KEY_GLOBEX, LiveProxy, proxy_section, serve

ACME = {"authorization": f"Bearer {KEY}"}
GLOBEX = {"authorization": f"Bearer {KEY_GLOBEX}"}


def land(cfg: SluiceConfig, trajectory_id: str, reward: float) -> None:
    """What the sink does with an audited trajectory version: write it into the DuckDB store."""
    topics = BatchTopics(audited="audited", deadletter="deadletter", ledger="ledger")
    batch = PendingBatch(topics)
    version = make_trajectory(trajectory_id, tenant="acme", n_steps=2, reward=reward)
    batch.add(SourceRecord("audited", 0, 0, trajectory_id, encode(version)))
    store = DuckDBStore(cfg.path(cfg.sink.database))
    try:
        store.write(batch, "test-sink")
    finally:
        store.close()


def chat(proxy: LiveProxy, trajectory: str, headers_key: str = KEY) -> None:
    client = openai.OpenAI(base_url=f"{proxy.url}/t/{trajectory}/v1", api_key=headers_key, max_retries=0)
    client.chat.completions.create(model="plain", messages=[{"role": "user", "content": "hello"}])


def assert_not_found(resp: httpx.Response) -> None:
    assert resp.status_code == 404, resp.text
    error = resp.json()["error"]
    assert error["code"] == "trajectory_not_found" and error["type"] == "not_found_error"


def test_pending_then_landed_and_never_another_tenants(live_proxy: LiveProxy) -> None:
    with httpx.Client(base_url=live_proxy.url, timeout=10) as http:
        assert_not_found(http.get("/v1/trajectories/job-1", headers=ACME))  # nothing yet

        chat(live_proxy, "job-1")
        chat(live_proxy, "job-1")
        got = http.get("/v1/trajectories/job-1", headers=ACME)
        assert got.status_code == 200, got.text
        body = got.json()
        assert body["id"] == "acme~job-1" and body["state"] == "pending"
        assert body["steps_recorded"] == 2 and body["ended"] is False
        assert body["versions"] == [] and body["rewards"] == []

        listed = http.get("/v1/trajectories", params={"state": "pending"}, headers=ACME).json()
        assert [row["id"] for row in listed["data"]] == ["acme~job-1"]

        # another tenant: its bare id is its own (unknown), the scoped id is the same 404
        assert_not_found(http.get("/v1/trajectories/job-1", headers=GLOBEX))
        assert_not_found(http.get("/v1/trajectories/acme~job-1", headers=GLOBEX))
        assert http.get("/v1/trajectories", headers=GLOBEX).json()["data"] == []
        assert http.get("/v1/trajectories/job-1").status_code == 401

        land(live_proxy.config, "acme~job-1", reward=0.75)
        landed = http.get("/v1/trajectories/job-1", headers=ACME).json()
        assert landed["state"] == "landed" and landed["store"] == "read"
        assert [v["version"] for v in landed["versions"]] == [1]
        assert landed["versions"][0]["reward"] == 0.75
        assert [r["value"] for r in landed["rewards"]] == [0.75]
        assert http.get("/v1/trajectories", params={"state": "pending"}, headers=ACME).json()["data"] == []
        assert_not_found(http.get("/v1/trajectories/acme~job-1", headers=GLOBEX))


@pytest.fixture
def strict_proxy(broker: LocalBroker, tmp_path: Path, echo_backend: str) -> Iterator[LiveProxy]:
    section = proxy_section(echo_backend, tmp_path, rewards_before_steps=False)
    cfg = make_config(broker, tmp_path, proxy=section, up={"local_model_backend": None})
    create_topics(cfg.broker, cfg.topics)
    with serve(cfg) as proxy:
        yield proxy


def test_a_reward_for_an_id_never_used_is_a_404_when_rewards_must_follow_steps(
    strict_proxy: LiveProxy,
) -> None:
    with httpx.Client(base_url=strict_proxy.url, timeout=10) as http:
        assert_not_found(http.post("/v1/trajectories/never/rewards", json={"value": 1}, headers=ACME))
        assert_not_found(
            http.post("/v1/trajectories/never/feedback", json={"kind": "thumbs_up"}, headers=ACME)
        )

        chat(strict_proxy, "job-2")
        ok = http.post("/v1/trajectories/job-2/rewards", json={"value": 1, "id": "r-ok"}, headers=ACME)
        assert ok.status_code == 202, ok.text
        # globex never used job-2: its own job-2 is unknown, acme's is not its to reward
        assert_not_found(http.post("/v1/trajectories/job-2/rewards", json={"value": 1}, headers=GLOBEX))

        land(strict_proxy.config, "acme~landed-only", reward=0.5)  # landed, stepped through another proxy
        late = http.post("/v1/trajectories/landed-only/rewards", json={"value": 1}, headers=ACME)
        assert late.status_code == 202, late.text

    cfg = strict_proxy.config
    rewards = [
        RewardEvent.model_validate_json(v)
        for _, v in read_topic(cfg.broker, cfg.topics.name("rewards_raw"), 2, idle_s=1.0)
    ]
    assert sorted(r.trajectory_id for r in rewards) == ["acme~job-2", "acme~landed-only"]
