"""Bad input gets a clear 4xx in the API's own error format, never a crash; upstream failures are passed
through (or 502) and recorded as failed steps."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from infra.broker import LocalBroker, free_port
from pipeline.topics import create_topics
from tests.conftest import make_config
from tests.pipeline.proxy.conftest import KEY, proxy_section, serve

CHAT = {"model": "plain", "messages": [{"role": "user", "content": "hi"}]}


def _openai_error(resp: httpx.Response, status: int) -> dict:
    assert resp.status_code == status, resp.text
    err = resp.json()["error"]
    assert set(err) == {"message", "type", "param", "code"} and err["message"]
    return err


def _anthropic_error(resp: httpx.Response, status: int) -> dict:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["type"] == "error" and body["error"]["message"]
    return body["error"]


@pytest.fixture
def proxy(broker: LocalBroker, tmp_path: Path, echo_backend: str):
    section = proxy_section(echo_backend, tmp_path, max_body_bytes=4096)
    section["backends"][1]["models"] = ["plain", "error-*", "echo-*"]
    section["backends"].insert(
        0, {"name": "dead", "base_url": f"http://127.0.0.1:{free_port()}/v1", "models": ["dead-*"]}
    )
    cfg = make_config(broker, tmp_path, proxy=section, up={"local_model_backend": None})
    create_topics(cfg.broker, cfg.topics)
    with serve(cfg) as live:
        yield live


def test_each_error_class(proxy) -> None:
    auth = {"authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=proxy.url, timeout=10) as http:
        # authentication, in both formats
        assert (
            _openai_error(http.post("/v1/chat/completions", json=CHAT), 401)["type"] == "authentication_error"
        )
        bad_key = {"authorization": "Bearer sk-nope"}
        assert (
            _openai_error(http.post("/v1/chat/completions", json=CHAT, headers=bad_key), 401)["code"]
            == "invalid_api_key"
        )
        msg = {"model": "plain", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
        assert _anthropic_error(http.post("/v1/messages", json=msg, headers={"x-api-key": "nope"}), 401)[
            "type"
        ] == ("authentication_error")

        # malformed bodies
        err = _openai_error(http.post("/v1/chat/completions", content=b"{not json", headers=auth), 400)
        assert "not valid JSON" in err["message"]
        err = _openai_error(
            http.post("/v1/chat/completions", content=b'{"model": "\xff\xfe"}', headers=auth), 400
        )
        assert "UTF-8" in err["message"]
        err = _openai_error(http.post("/v1/chat/completions", json=[1, 2], headers=auth), 400)
        assert "JSON object" in err["message"]
        anth = _anthropic_error(http.post("/v1/messages", content=b"nope", headers=auth), 400)
        assert anth["type"] == "invalid_request_error" and "JSON" in anth["message"]

        # wrong types and shapes
        err = _openai_error(
            http.post("/v1/chat/completions", json={**CHAT, "temperature": "hot"}, headers=auth), 400
        )
        assert err["param"] == "temperature"
        err = _openai_error(
            http.post(
                "/v1/chat/completions",
                json={"model": "plain", "messages": [{"role": "wizard"}]},
                headers=auth,
            ),
            400,
        )
        assert err["param"] == "messages[0].role"
        err = _openai_error(http.post("/v1/chat/completions", json={"model": "plain"}, headers=auth), 400)
        assert err["param"] == "messages"
        anth = _anthropic_error(
            http.post("/v1/messages", json={**msg, "max_tokens": "lots"}, headers=auth), 400
        )
        assert "max_tokens" in anth["message"]

        # unknown model
        err = _openai_error(
            http.post("/v1/chat/completions", json={**CHAT, "model": "nope"}, headers=auth), 404
        )
        assert err["code"] == "model_not_found" and err["param"] == "model"
        assert _anthropic_error(http.post("/v1/messages", json={**msg, "model": "nope"}, headers=auth), 404)[
            "type"
        ] == ("not_found_error")

        # oversized: declared, and streamed without a length (rejected before reading it all)
        big = b'{"model": "plain", "messages": [], "pad": "' + b"x" * 10_000 + b'"}'
        assert (
            _openai_error(http.post("/v1/chat/completions", content=big, headers=auth), 413)["type"]
            == "request_too_large"
        )
        chunked = http.post("/v1/chat/completions", content=iter([big[:3000], big[3000:]]), headers=auth)
        assert _openai_error(chunked, 413)["message"].startswith("request body exceeds")

        # routes and methods (other paths below /v1 are forwarded to a backend: tests/.../test_forwarding.py)
        assert _openai_error(http.get("/nothing-here", headers=auth), 404)["message"].startswith(
            "no such endpoint"
        )
        assert _openai_error(http.get("/v1/", headers=auth), 404)["message"].startswith("no such endpoint")
        assert _openai_error(http.get("/v1/chat/completions", headers=auth), 405)

        # upstream error: status and body passed through, step recorded as failed
        up = http.post(
            "/v1/chat/completions",
            json={**CHAT, "model": "error-429"},
            headers={**auth, "x-sluice-trajectory-id": "err-1"},
        )
        assert _openai_error(up, 429)["message"] == "echo backend error 429"
        anth = _anthropic_error(
            http.post("/v1/messages", json={**msg, "model": "error-503"}, headers=auth), 503
        )
        assert anth["type"] == "api_error" and "503" in anth["message"]

        # upstream unreachable: 502 in the API's format, recorded too
        down = http.post(
            "/v1/chat/completions",
            json={**CHAT, "model": "dead-1"},
            headers={**auth, "x-sluice-trajectory-id": "err-2"},
        )
        assert "unreachable" in _openai_error(down, 502)["message"]
        down_stream = http.post(
            "/v1/chat/completions", json={**CHAT, "model": "dead-1", "stream": True}, headers=auth
        )
        assert _openai_error(down_stream, 502)["type"] == "upstream_error"

        # the proxy is still fine, and says so
        assert http.post("/v1/chat/completions", json=CHAT, headers=auth).status_code == 200
        assert http.get("/healthz").json()["status"] == "ok"
        metrics = http.get("/metrics").text
        assert 'sluice_proxy_requests_total{route="create_chat_completion",status="401"}' in metrics
        assert 'sluice_proxy_upstream_errors_total{backend="dead",kind="unreachable"}' in metrics
        assert "sluice_proxy_spool_depth" in metrics and "sluice_proxy_publish_lag_seconds_bucket" in metrics

    events = proxy.events(5)
    failed = {e.trajectory_id: e for e in events if e.action_result.error}
    assert failed["acme~err-1"].action_result.status_code == 429 and failed["acme~err-1"].action.choices == []
    assert failed["acme~err-1"].action_result.error == "echo backend error 429"
    assert failed["acme~err-2"].action_result.status_code == 502
    assert len(failed) == 4  # 429, 503 (anthropic), two unreachable
    assert sum(1 for e in events if not e.action_result.error) == 1
