"""Tenants are isolated at the API: every cross-tenant probe is a 404 that publishes nothing, an id one
tenant uses never blocks another's, an erased trajectory is a 410, and pathological nesting is a 400."""

from __future__ import annotations

import json
import time

import httpx
from confluent_kafka import Producer

from sluice.events import ErasureEvent, RewardEvent, StepEvent, TrajectoryEndEvent
from tests.pipeline.proxy.conftest import KEY, KEY_GLOBEX, LiveProxy

ACME = {"authorization": f"Bearer {KEY}"}
GLOBEX = {"authorization": f"Bearer {KEY_GLOBEX}"}
CHAT = {"model": "plain", "messages": [{"role": "user", "content": "hello"}]}


def _chat(
    http: httpx.Client, headers: dict[str, str], tid: str | None = None, path: str = "/v1"
) -> httpx.Response:
    extra = {"x-sluice-trajectory-id": tid} if tid else {}
    return http.post(path + "/chat/completions", json=CHAT, headers={**headers, **extra})


def test_cross_tenant_probes_are_refused_and_change_nothing(live_proxy: LiveProxy) -> None:
    with httpx.Client(base_url=live_proxy.url, timeout=10) as http:
        first = _chat(http, ACME, "shared")
        assert first.status_code == 200
        acme_id = first.headers["x-sluice-trajectory-id"]
        assert acme_id == "acme~shared"

        # globex names acme's trajectory: every surface is a 404, nothing is read or published
        probes = [
            http.post(f"/v1/trajectories/{acme_id}/rewards", json={"value": 1}, headers=GLOBEX),
            http.post(f"/v1/trajectories/{acme_id}/feedback", json={"kind": "thumbs_down"}, headers=GLOBEX),
            http.post(f"/v1/trajectories/{acme_id}/end", json={}, headers=GLOBEX),
            _chat(http, GLOBEX, acme_id),
            _chat(http, GLOBEX, path=f"/t/{acme_id}/v1"),
            http.post(
                "/v1/messages",
                json={"model": "plain", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}]},
                headers={**GLOBEX, "x-sluice-trajectory-id": acme_id},
            ),
        ]
        for resp in probes:
            assert resp.status_code == 404, resp.text
            assert "no trajectory" in resp.text and "shared" in resp.text

        # the same name is globex's own trajectory: served, in its own id space, early reward included
        early = http.post("/v1/trajectories/shared/rewards", json={"value": 0.5}, headers=GLOBEX)
        assert early.status_code == 202 and early.json()["trajectory_id"] == "globex~shared"
        own = _chat(http, GLOBEX, "shared")
        assert own.status_code == 200 and own.headers["x-sluice-trajectory-id"] == "globex~shared"
        # ... and acme's trajectory goes on, unblocked; scoped or bare, its id is the same
        again = _chat(http, ACME, acme_id)
        assert again.status_code == 200 and again.headers["x-sluice-step-index"] == "1"
        assert http.post(f"/v1/trajectories/{acme_id}/end", json={}, headers=ACME).status_code == 202

    # acme's two steps and end, globex's step; then 2 s without another: a probe published nothing late
    steps = live_proxy.events(4, idle_s=2.0)
    by_id: dict[str, list[str]] = {}
    for e in steps:
        assert isinstance(e, StepEvent | TrajectoryEndEvent)
        by_id.setdefault(e.trajectory_id, []).append(e.tenant)
    assert by_id == {"acme~shared": ["acme", "acme", "acme"], "globex~shared": ["globex"]}
    rewards = live_proxy.events(1, topic="rewards_raw")
    assert [(r.trajectory_id, r.tenant) for r in rewards if isinstance(r, RewardEvent)] == [
        ("globex~shared", "globex")
    ]


def test_an_erased_trajectory_is_refused_by_the_proxy(live_proxy: LiveProxy) -> None:
    cfg = live_proxy.config
    with httpx.Client(base_url=live_proxy.url, timeout=10) as http:
        assert _chat(http, ACME, "gone").status_code == 200
        event = ErasureEvent(
            erasure_id="e-1", scope="trajectory", target="acme~gone", trajectory_id="acme~gone"
        )
        producer = Producer(cfg.broker.producer_config())
        producer.produce(cfg.topics.name("erasure"), key=b"acme~gone", value=event.model_dump_json())
        assert producer.flush(10) == 0
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the proxy reads the erasure topic on its own
            late = http.post("/v1/trajectories/gone/rewards", json={"value": 1}, headers=ACME)
            if late.status_code == 410:
                break
            time.sleep(0.3)
        assert late.status_code == 410 and "erased" in late.text
        assert _chat(http, ACME, "acme~gone").status_code == 410
        assert http.post("/v1/trajectories/gone/end", json={}, headers=ACME).status_code == 410
    links = json.loads((cfg.path(cfg.proxy.spool_dir) / "links.json").read_text())
    assert all(s["trajectory_id"] != "acme~gone" for s in links["states"])


def test_pathological_nesting_is_a_400_on_every_surface(live_proxy: LiveProxy) -> None:
    deep_array = b'{"model": "plain", "messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    deep_object = b'{"model": "plain", "x": ' + b'{"a":' * 100_000 + b"1" + b"}" * 100_000 + b"}"
    paths = [
        "/v1/chat/completions",
        "/v1/completions",
        "/v1/responses",
        "/v1/messages",
        "/v1/trajectories/t1/rewards",
        "/v1/trajectories/t1/feedback",
        "/v1/trajectories/t1/end",
    ]
    with httpx.Client(base_url=live_proxy.url, timeout=30) as http:
        for path in paths:
            for body in (deep_array, deep_object):
                resp = http.post(path, content=body, headers={**ACME, "content-type": "application/json"})
                assert resp.status_code == 400, (path, resp.status_code, resp.text[:200])
                assert "nested deeper than" in resp.text, (path, resp.text[:200])
                assert "error" in resp.json()
