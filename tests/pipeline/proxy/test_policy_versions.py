"""The proxy records which policy version served each step, on the real broker: a serve-model process
(tiny model) behind the proxy takes a weight push mid-traffic; steps name the version the backend reported
(header / extension field), both versions when a response straddled the swap, the config string when the
backend reports none, and the agent's task id from the header or the request metadata."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from infra.broker import LocalBroker, free_port
from pipeline.topics import create_topics
from sluice.events import PolicyEvent, StepEvent
from sluice.policy_client import PolicyClient
from tests.conftest import make_config
from tests.kafka_helpers import read_topic
from tests.pipeline.proxy.conftest import KEY, LiveProxy, proxy_section, serve
from tests.trainers.serving.serve_process import ServeProcess, serve_model
from trainers.tiny_model import build_tiny

LAYER = "model.layers.0.mlp.up_proj.weight"


@pytest.fixture
def proxied(
    broker: LocalBroker, tmp_path: Path, echo_backend: str
) -> Iterator[tuple[LiveProxy, ServeProcess]]:
    topics = {"prefix": f"p{time.monotonic_ns() % 10**9}.", "partitions": 2}
    port = free_port()
    section = proxy_section(echo_backend, tmp_path)
    policy = {"name": "policy", "base_url": f"http://127.0.0.1:{port}/v1", "models": ["sluice-tiny*"],
              "return_token_ids": True, "model_version": "from-config"}  # fmt: skip
    section["backends"] = [policy, *section["backends"]]
    cfg = make_config(broker, tmp_path, proxy=section, topics=topics, up={"local_model_backend": None})
    create_topics(cfg.broker, cfg.topics)  # the policy-events topic too
    sections = {
        "broker": {"bootstrap_servers": broker.bootstrap_servers, "embedded": False},
        "topics": topics,
    }
    serve_cfg = {"max_batch": 1, "publish_events": True}
    policy_server = serve_model(tmp_path / "srv", "sluice-tiny", serve_cfg, sections, port=port)
    with policy_server as server, serve(cfg) as proxy:
        yield proxy, server


def test_steps_record_the_serving_version_and_task_id(proxied: tuple[LiveProxy, ServeProcess]) -> None:
    proxy, server = proxied
    agent = openai.OpenAI(base_url=proxy.url + "/v1", api_key=KEY)
    msgs = [{"role": "user", "content": "count"}]
    first = agent.chat.completions.with_raw_response.create(
        model="sluice-tiny", messages=msgs, max_tokens=4, extra_headers={"x-sluice-task-id": "task-a"}
    )
    assert first.parse().model_extra["sluice"]["policy_version"] == "0"  # the agent may read it too
    base = build_tiny()[0].state_dict()
    assert PolicyClient(server.url).push_state_dict({LAYER: base[LAYER] * 3}, "1").serving_version == "1"
    stream = agent.chat.completions.create(
        model="sluice-tiny", messages=msgs, max_tokens=4, stream=True,
        metadata={"sluice_task_id": "task-b"},
    )  # fmt: skip
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) is not None
    agent.chat.completions.create(model="tok-1", messages=msgs)  # a backend that reports no version

    # A response that straddles a swap: three prompts decoded one batch each (max_batch=1), each to its
    # 400-token limit (ignore_eos). The push lands while the first is being decoded, so the last prompt
    # at least is decoded by the new version (the swap goes ahead of queued prompts).
    result: dict = {}

    def straddle() -> None:
        result["r"] = agent.completions.create(model="sluice-tiny", prompt=["a" * 8, "b", "c"], max_tokens=400,
                                               temperature=1.0, stop=None, extra_body={"ignore_eos": True})  # fmt: skip

    worker = threading.Thread(target=straddle)
    worker.start()
    deadline = time.monotonic() + 60
    while httpx.get(server.url + "/health").json()["running_rows"] == 0:  # the first prompt is decoding
        assert time.monotonic() < deadline and worker.is_alive()
        time.sleep(0.005)
    PolicyClient(server.url).push_state_dict({LAYER: base[LAYER] * 5}, "2")
    worker.join(60)
    assert result["r"].model_extra["sluice"]["policy_versions"] == ["1", "2"]

    steps = [e for e in proxy.events(4) if isinstance(e, StepEvent)]
    meta = [s.metadata for s in sorted(steps, key=lambda s: s.metadata.started_at)]
    assert [(m.backend, m.model_version, m.policy_versions, m.task_id) for m in meta] == [
        ("policy", "0", ["0"], "task-a"),
        ("policy", "1", ["1"], "task-b"),
        ("echo-tokens", "echo-v1", [], None),  # the config string when the backend names no version
        ("policy", "2", ["1", "2"], None),  # straddled the swap: both, the last one as the step's version
    ]
    cfg = proxy.config
    raw = read_topic(cfg.broker, cfg.topics.name("policy_events"), 3, idle_s=0.5)
    events = [PolicyEvent.model_validate_json(v) for _, v in raw]
    assert [(e.action, e.version) for e in events] == [("load", "0"), ("update", "1"), ("update", "2")]
