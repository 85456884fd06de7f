"""What a backend receives for a recorded call: the agent's body bytes exactly as they arrived when the
recording adds nothing to it, else the typed request serialised once with only the recording's additions.

    python -m pytest -q tests/pipeline/proxy/test_forwarded_body.py
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from infra.broker import LocalBroker
from pipeline.topics import create_topics
from tests.conftest import make_config
from tests.pipeline.proxy.conftest import BACKEND_KEY, KEY, LiveProxy, proxy_section, serve
from tests.pipeline.proxy.recording_backend import RecordingBackend, recording_backend

HEADERS = {"authorization": f"Bearer {KEY}", "content-type": "application/json"}


@pytest.fixture
def tapped(broker: LocalBroker, tmp_path: Path) -> Iterator[tuple[LiveProxy, RecordingBackend]]:
    with recording_backend(BACKEND_KEY) as (url, backend):
        cfg = make_config(
            broker, tmp_path, proxy=proxy_section(url, tmp_path), up={"local_model_backend": None}
        )
        create_topics(cfg.broker, cfg.topics)
        with serve(cfg) as proxy:
            yield proxy, backend


def test_a_body_the_recording_adds_nothing_to_reaches_the_backend_byte_for_byte(
    tapped: tuple[LiveProxy, RecordingBackend],
) -> None:
    proxy, backend = tapped
    # spacing, key order, an escaped and a raw non-ASCII character, an integer temperature and an unknown
    # field: re-encoding would change every one of them
    chat = (
        b'{ "temperature" : 1,"model":"echo-1",\n "messages":[{"role":"user",'
        b'"content":"caf\\u00e9 \xc3\xa9 raw-1"}], "x_unknown": {"b":2,"a":1} }'
    )
    completion = b'{"prompt": "raw-2 caf\\u00e9", "model": "echo-1",  "max_tokens": 3}'
    streamed = (
        b'{"model":"echo-1","stream":true,"stream_options":{"include_usage":true},'
        b'"messages":[{"role":"user","content":"raw-3"}]}'
    )
    for path, body in (
        ("/v1/chat/completions", chat),
        ("/v1/completions", completion),
        ("/v1/chat/completions", streamed),
    ):
        resp = httpx.post(proxy.url + path, content=body, headers=HEADERS, timeout=30)
        assert resp.status_code == 200, resp.text
        assert backend.raw_bodies[-1] == body


def test_a_body_the_recording_adds_to_is_the_agents_request_plus_the_addition(
    tapped: tuple[LiveProxy, RecordingBackend],
) -> None:
    proxy, backend = tapped
    body = {
        "model": "echo-1",
        "stream": True,
        "messages": [{"role": "user", "content": "add-1 café"}],
        "temperature": 0.5,
        "x_unknown": [1, {"nested": None}],
    }
    resp = httpx.post(
        proxy.url + "/v1/chat/completions", content=json.dumps(body), headers=HEADERS, timeout=30
    )
    assert resp.status_code == 200 and resp.text.endswith("data: [DONE]\n\n")
    chunks = [json.loads(line[6:]) for line in resp.text.split("\n\n") if line[6:].startswith("{")]
    assert chunks and all(c.get("usage") is None for c in chunks)  # the usage only the recording asked for
    assert json.loads(backend.raw_bodies[-1]) == {**body, "stream_options": {"include_usage": True}}
