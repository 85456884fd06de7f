"""The rest of the OpenAI API through the proxy: forwarded to a backend as sent, answered as the backend
answers, never recorded; the proxy's own surfaces and the translated ones are not forwarded."""

from __future__ import annotations

import base64
import hashlib
import struct
from pathlib import Path

import httpx
import openai
import pytest

from infra.broker import LocalBroker, free_port
from pipeline.topics import create_topics
from sluice.events import StepEvent
from tests.conftest import make_config
from tests.pipeline.proxy.conftest import BACKEND_KEY, KEY, KEY_GLOBEX, LiveProxy, proxy_section, serve


def test_embeddings_and_model_cards_through_the_openai_sdk(live_proxy: LiveProxy) -> None:
    client = openai.OpenAI(base_url=live_proxy.url + "/v1", api_key=KEY, max_retries=0)
    # the SDK asks for base64 and decodes it: the bytes went through unchanged
    got = client.embeddings.create(model="echo-1", input=["first text", "second text"], dimensions=16)
    assert [len(d.embedding) for d in got.data] == [16, 16]
    assert got.usage.prompt_tokens == len(b"first text") + len(b"second text")
    # the same vectors as floats: the proxy did not touch the answer
    raw = httpx.post(
        live_proxy.url + "/v1/embeddings",
        headers={"Authorization": f"Bearer {KEY}"},
        json={"model": "echo-1", "input": "first text", "dimensions": 16, "encoding_format": "base64"},
    )
    assert raw.status_code == 200 and raw.headers["x-sluice-forwarded"] == "unrecorded"
    packed = base64.b64decode(raw.json()["data"][0]["embedding"])
    assert list(struct.unpack("<16f", packed)) == pytest.approx(got.data[0].embedding)

    card = client.models.retrieve("echo-1")
    assert card.id == "echo-1" and card.owned_by == "echo"
    with pytest.raises(openai.NotFoundError) as nf:
        client.models.retrieve("no-such-model")
    assert nf.value.body["code"] == "model_not_found"


def test_any_other_call_is_forwarded_as_sent_and_nothing_is_recorded(live_proxy: LiveProxy) -> None:
    boundary = "sluice-test-boundary"
    upload = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nassistants\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="report.pdf"\r\n'
            "Content-Type: application/pdf\r\n\r\n"
        ).encode()
        + bytes(range(256)) * 4096
        + f"\r\n--{boundary}--\r\n".encode()
    )  # over 1 MiB, not text
    resp = httpx.post(
        live_proxy.url + "/t/run-fwd/v1/files?purpose=assistants&x=a%2Fb",
        headers={
            "Authorization": f"Bearer {KEY}",
            "x-api-key": KEY,
            "cookie": "session=agent-cookie",
            "openai-organization": "org-agent",
            "openai-beta": "assistants=v2",
            "content-type": f"multipart/form-data; boundary={boundary}",
        },
        content=upload,
    )
    assert resp.status_code == 200, resp.text
    seen = resp.json()
    assert resp.headers["x-echo-reflected"] == "1" and resp.headers["x-sluice-forwarded"] == "unrecorded"
    assert seen["method"] == "POST" and seen["path"] == "/v1/files"
    assert seen["query"] == "purpose=assistants&x=a%2Fb"
    assert seen["content_type"] == f"multipart/form-data; boundary={boundary}"
    assert seen["body_bytes"] == len(upload) and seen["body_sha256"] == hashlib.sha256(upload).hexdigest()
    # the backend saw its own key (it refuses any other), and none of the agent's credentials or cookies
    assert seen["headers_present"] == ["authorization"]

    deleted = httpx.delete(live_proxy.url + "/v1/files/file-123", headers={"Authorization": f"Bearer {KEY}"})
    assert deleted.status_code == 200 and deleted.json()["method"] == "DELETE"

    # only the one chat call below is on the steps topic: forwarded calls are not steps
    chat = httpx.post(
        live_proxy.url + "/v1/chat/completions",
        headers={"Authorization": f"Bearer {KEY}"},
        json={"model": "echo-1", "messages": [{"role": "user", "content": "marker"}]},
    )
    assert chat.status_code == 200
    events = live_proxy.events(1)
    assert len(events) == 1 and isinstance(events[0], StepEvent)
    assert events[0].trajectory_id == chat.headers["x-sluice-trajectory-id"]


def test_what_is_not_forwarded(live_proxy: LiveProxy) -> None:
    url = live_proxy.url
    auth = {"Authorization": f"Bearer {KEY}"}
    emb = {"model": "echo-1", "input": "x"}

    no_key = httpx.post(url + "/v1/embeddings", json=emb)
    assert no_key.status_code == 401 and no_key.json()["error"]["code"] == "missing_api_key"
    # a trajectory prefix naming another tenant's trajectory is refused before anything is forwarded
    other = httpx.post(url + "/t/globex~run-1/v1/embeddings", headers=auth, json=emb)
    assert other.status_code == 404 and other.json()["error"]["code"] == "trajectory_not_found"
    own = httpx.post(url + "/t/globex~run-1/v1/embeddings", headers={"Authorization": f"Bearer {KEY_GLOBEX}"}, json=emb)  # fmt: skip
    assert own.status_code == 200

    # the proxy's own surfaces: another method is a 405, in the surface's error format
    wrong = httpx.get(url + "/v1/chat/completions", headers=auth)
    assert wrong.status_code == 405 and wrong.json()["error"]["message"]
    wrong = httpx.get(url + "/v1/messages", headers=auth)
    assert wrong.status_code == 405 and wrong.json()["type"] == "error"
    # below the translated surfaces the backend has nothing: a 404, not a forward
    gone = httpx.get(url + "/v1/responses/resp_abc", headers=auth)
    assert gone.status_code == 404 and "x-sluice-forwarded" not in gone.headers
    batches = httpx.post(url + "/v1/messages/batches", headers=auth, json={"requests": []})
    assert batches.status_code == 404 and batches.json()["error"]["type"] == "not_found_error"
    # the proxy's reward API is its own, with or without a trajectory prefix: a trajectory's data never
    # goes to a backend
    reward = httpx.post(url + "/v1/trajectories/run-1/rewards", headers=auth, json={"value": 1.0})
    assert reward.status_code == 202 and "x-sluice-forwarded" not in reward.headers
    for path in ("/v1/trajectories/run-1/rewards", "/t/run-1/v1/trajectories/run-1/rewards"):
        refused = httpx.get(url + path, headers=auth)
        assert refused.status_code in (404, 405) and "x-sluice-forwarded" not in refused.headers, path
    listed = httpx.get(url + "/v1/trajectories", headers=auth)  # the proxy's own list of the tenant's
    assert listed.status_code == 200 and "x-sluice-forwarded" not in listed.headers


def test_forwarding_switched_off(broker: LocalBroker, tmp_path: Path, echo_backend: str) -> None:
    cfg = make_config(
        broker, tmp_path, proxy=proxy_section(echo_backend, tmp_path, forward_unrecorded=False),
        up={"local_model_backend": None},
    )  # fmt: skip
    create_topics(cfg.broker, cfg.topics)
    auth = {"Authorization": f"Bearer {KEY}"}
    with serve(cfg) as live:
        off = httpx.post(live.url + "/v1/embeddings", headers=auth, json={"model": "echo-1", "input": "x"})
        assert off.status_code == 404 and off.json()["error"]["message"].startswith("no such endpoint")
        # the proxy's own surfaces still answer
        card = httpx.get(live.url + "/v1/models/echo-1", headers=auth)
        assert card.status_code == 200 and card.json()["id"] == "echo-1"


def test_a_backend_that_is_down_is_a_502_naming_it(broker: LocalBroker, tmp_path: Path) -> None:
    section = proxy_section(f"http://127.0.0.1:{free_port()}/v1", tmp_path)
    cfg = make_config(broker, tmp_path, proxy=section, up={"local_model_backend": None})
    create_topics(cfg.broker, cfg.topics)
    with serve(cfg) as down:
        resp = httpx.post(
            down.url + "/v1/embeddings",
            headers={"Authorization": f"Bearer {KEY}"},
            json={"model": "echo-1", "input": "x"},
        )
        assert resp.status_code == 502 and "'echo' is unreachable" in resp.json()["error"]["message"]
        assert BACKEND_KEY not in resp.text
