"""The paths and headers other clients use reach the same API: the Azure OpenAI SDK (deployment paths,
``api-version``, ``api-key``), a base URL without ``/v1``, a trailing slash, a body with a byte-order mark,
and the legacy ``function`` role; the ``api-key`` credential is never recorded or forwarded."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from pipeline.proxy.surfaces.path_aliases import canonical_path
from sluice.events import StepEvent
from tests.pipeline.proxy.conftest import KEY, LiveProxy

MESSAGES = [{"role": "user", "content": "hello there"}]


@pytest.mark.parametrize(
    ("path", "canonical", "deployment"),
    [
        ("/v1/chat/completions", "/v1/chat/completions", None),
        ("/chat/completions", "/v1/chat/completions", None),
        ("/messages/count_tokens", "/v1/messages/count_tokens", None),
        ("/v1/chat/completions/", "/v1/chat/completions", None),
        ("/openai/deployments/gpt-4o/chat/completions", "/v1/chat/completions", "gpt-4o"),
        ("/openai/v1/responses", "/v1/responses", None),
        ("/openai/models", "/v1/models", None),
        ("/t/run-7/chat/completions", "/t/run-7/v1/chat/completions", None),
        ("/t/run-7/openai/deployments/d1/completions/", "/t/run-7/v1/completions", "d1"),
        ("/healthz", "/healthz", None),
        ("/metrics", "/metrics", None),
        ("/", "/", None),
        ("/v1/", "/v1/", None),
    ],
)
def test_canonical_paths(path: str, canonical: str, deployment: str | None) -> None:
    assert canonical_path(path) == (canonical, deployment)


def test_the_azure_openai_sdk_works_through_the_proxy(live_proxy: LiveProxy) -> None:
    client = openai.AzureOpenAI(
        azure_endpoint=live_proxy.url, api_key=KEY, api_version="2024-10-21", max_retries=0
    )
    reply = client.chat.completions.with_raw_response.create(
        model="tok-small", messages=MESSAGES, extra_headers={"user-agent": "azure-agent"}
    )
    assert reply.parse().choices[0].message.content == "Echo: hello there"
    tid = reply.headers["x-sluice-trajectory-id"]
    streamed = "".join(
        c.choices[0].delta.content or ""
        for c in client.chat.completions.create(model="tok-small", messages=MESSAGES, stream=True)
        if c.choices
    )
    assert streamed == "Echo: hello there"
    raw = live_proxy.steps(2)
    assert all(KEY.encode() not in v for _, v in raw)  # the api-key never reaches the topic
    steps = [s for s in live_proxy.events(2) if isinstance(s, StepEvent)]
    assert {s.trajectory_id for s in steps} >= {tid}
    assert all("api-key" not in (s.metadata.request_headers or {}) for s in steps)


def test_a_deployment_path_without_a_model_in_the_body_uses_the_deployment(live_proxy: LiveProxy) -> None:
    r = httpx.post(
        live_proxy.url + "/openai/deployments/tok-small/chat/completions?api-version=2024-10-21",
        json={"messages": MESSAGES},
        headers={"api-key": KEY},
    )
    assert r.status_code == 200 and r.json()["model"] == "tok-small"


def test_a_base_url_without_v1_and_a_trailing_slash(live_proxy: LiveProxy) -> None:
    client = openai.OpenAI(base_url=live_proxy.url, api_key=KEY, max_retries=0)
    assert client.chat.completions.create(model="tok-small", messages=MESSAGES).choices[0].message.content
    assert [m.id for m in client.models.list().data]
    r = httpx.post(
        live_proxy.url + "/v1/chat/completions/",
        json={"model": "tok-small", "messages": MESSAGES},
        headers={"authorization": f"Bearer {KEY}"},
    )
    assert r.status_code == 200


def test_a_byte_order_mark_and_the_legacy_function_role(live_proxy: LiveProxy) -> None:
    body = {
        "model": "tok-small",
        "messages": [
            *MESSAGES,
            {"role": "assistant", "content": None, "function_call": {"name": "lookup", "arguments": "{}"}},
            {"role": "function", "name": "lookup", "content": "42"},
        ],
    }
    r = httpx.post(
        live_proxy.url + "/v1/chat/completions",
        content=b"\xef\xbb\xbf" + json.dumps(body).encode(),
        headers={"authorization": f"Bearer {KEY}", "content-type": "application/json"},
    )
    assert r.status_code == 200, r.text
    step = next(s for s in live_proxy.events(1) if isinstance(s, StepEvent))
    assert [m.role for m in step.observation.messages][-1] == "function"


def test_an_unknown_api_key_header_is_refused(live_proxy: LiveProxy) -> None:
    r = httpx.post(
        live_proxy.url + "/openai/deployments/tok-small/chat/completions?api-version=2024-10-21",
        json={"messages": MESSAGES},
        headers={"api-key": "not-a-key"},
    )
    assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
