"""A backend whose stream breaks after a few chunks: every surface tells the agent's SDK that the answer
was cut short (none reads it as complete), and the step is recorded with what arrived and why it ended."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
import uvicorn

from infra.broker import LocalBroker, free_port
from pipeline.topics import create_topics
from sluice.events import StepEvent
from tests.conftest import make_config
from tests.pipeline.proxy.conftest import KEY, LiveProxy, proxy_section, serve

PARTS = ["first ", "second ", "third "]


async def breaking_backend(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Streams three chunks of a chat (or text completion) answer, then drops the connection."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    while (await receive()).get("more_body"):
        pass
    completions = scope["path"].endswith("/v1/completions")
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]}
    )
    for part in PARTS:
        choice = {"index": 0, "finish_reason": None}
        choice.update({"text": part} if completions else {"delta": {"content": part}})
        kind = "text_completion" if completions else "chat.completion.chunk"
        chunk = {"id": "c1", "object": kind, "created": 0, "model": "m", "choices": [choice]}
        await send({"type": "http.response.body", "body": b"data: " + json.dumps(chunk).encode() + b"\n\n",
                    "more_body": True})  # fmt: skip
        await asyncio.sleep(0.02)
    raise RuntimeError("the backend went away mid-answer")  # uvicorn drops the connection


@contextlib.contextmanager
def running(app: Any) -> Iterator[str]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="critical"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "backend did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture
def proxy(broker: LocalBroker, tmp_path: Path) -> Iterator[LiveProxy]:
    with running(breaking_backend) as url:
        cfg = make_config(
            broker, tmp_path, proxy=proxy_section(url, tmp_path), up={"local_model_backend": None}
        )
        create_topics(cfg.broker, cfg.topics)
        with serve(cfg) as live:
            yield live


def test_every_surface_says_the_answer_was_cut_short(proxy: LiveProxy) -> None:
    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key=KEY, max_retries=0)
    got: list[str] = []
    with pytest.raises(openai.APIError) as err:
        stream = client.chat.completions.create(
            model="echo-1", messages=[{"role": "user", "content": "chat"}], stream=True
        )
        for chunk in stream:
            got.append(chunk.choices[0].delta.content or "")
    assert "backend stream broke" in str(err.value) and "".join(got) == "".join(PARTS)

    with pytest.raises(openai.APIError):
        for _ in client.completions.create(model="echo-1", prompt="text", stream=True):
            pass

    events = [e.type for e in client.responses.create(model="echo-1", input="responses", stream=True)]
    assert events[-1] == "response.failed" and "response.completed" not in events

    claude = anthropic.Anthropic(base_url=proxy.url, api_key=KEY, max_retries=0)
    with pytest.raises(anthropic.APIStatusError) as aerr:
        for _ in claude.messages.create(
            model="echo-1", max_tokens=50, stream=True, messages=[{"role": "user", "content": "anthropic"}]
        ):
            pass
    assert aerr.value.body["error"]["type"] == "api_error"

    steps = [e for e in proxy.events(4) if isinstance(e, StepEvent)]
    assert len(steps) == 4
    for step in steps:
        assert step.action_result is not None and "backend stream broke" in (step.action_result.error or "")
    # what arrived before the break is on each step
    assert all("".join(PARTS) in json.dumps(s.model_dump(mode="json")) for s in steps)
