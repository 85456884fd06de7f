"""``previous_response_id`` end to end: the openai SDK against the real proxy, the real echo backend (with a
tap recording every body it receives) and the real broker."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
import uvicorn
from confluent_kafka import Producer

from infra.broker import LocalBroker, free_port
from infra.echo_backend import EchoBackend
from pipeline.topics import create_topics
from sluice.events import ErasureEvent, StepEvent, reconstruct_messages
from tests.conftest import make_config
from tests.pipeline.proxy.conftest import (
    BACKEND_KEY,
    KEY,
    KEY_GLOBEX,
    LiveProxy,
    proxy_section,
    serve,
    wait_port,
)


class Tap:
    """ASGI wrapper: records the JSON body of every chat request, then hands it to the echo backend."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.bodies: list[dict[str, Any]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].endswith("/chat/completions"):
            await self.app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            msg = await receive()
            chunks.append(msg.get("body", b""))
            more = msg.get("more_body", False)
        data = b"".join(chunks)
        self.bodies.append(json.loads(data))
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": data, "more_body": False}

        await self.app(scope, replay, send)


@pytest.fixture
def tapped_backend() -> Iterator[tuple[str, Tap]]:
    tap = Tap(EchoBackend(["echo-1"], api_key=BACKEND_KEY))
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(tap, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_port(port)
        yield f"http://127.0.0.1:{port}/v1", tap
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture
def proxy(broker: LocalBroker, tmp_path: Path, tapped_backend: tuple[str, Tap]) -> Iterator[LiveProxy]:
    cfg = make_config(
        broker, tmp_path, proxy=proxy_section(tapped_backend[0], tmp_path), up={"local_model_backend": None}
    )
    create_topics(cfg.broker, cfg.topics)
    with serve(cfg) as live:
        yield live


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def _echo(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": f"Echo: {text}"}


def test_previous_response_id_sends_the_whole_conversation_and_links_one_trajectory(
    proxy: LiveProxy, tapped_backend: tuple[str, Tap]
) -> None:
    tap = tapped_backend[1]
    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key=KEY, max_retries=0)
    sys_msg = {"role": "system", "content": "Be brief."}

    raw1 = client.responses.with_raw_response.create(
        model="plain", instructions="Be brief.", input="I am Ann."
    )
    r1 = raw1.parse()
    assert r1.output_text == "Echo: I am Ann." and r1.store is True and r1.id.startswith("resp_")
    tid = raw1.headers["x-sluice-trajectory-id"]

    # non-streaming continuation; the previous instructions are not carried over, new ones are sent
    raw2 = client.responses.with_raw_response.create(
        model="plain", instructions="Be brief.", input="Who am I?", previous_response_id=r1.id
    )
    r2 = raw2.parse()
    assert r2.previous_response_id == r1.id and r2.output_text == "Echo: Who am I?"
    assert tap.bodies[-1]["messages"] == [sys_msg, _user("I am Ann."), _echo("I am Ann."), _user("Who am I?")]

    # streaming continuation, different instructions: still the same trajectory (linked by the response)
    with client.responses.stream(
        model="plain", instructions="Now be terse.", input="Again?", previous_response_id=r2.id
    ) as stream:
        r3 = stream.get_final_response()
    assert r3.output_text == "Echo: Again?" and r3.previous_response_id == r2.id
    convo = [_user("I am Ann."), _echo("I am Ann."), _user("Who am I?"), _echo("Who am I?")]
    assert tap.bodies[-1]["messages"] == [
        {"role": "system", "content": "Now be terse."},
        *convo,
        _user("Again?"),
    ]
    assert tap.bodies[-1]["stream"] is True

    # a tool call and its output, continued by id only
    tools = [{"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {}}}]
    r4 = client.responses.create(
        model="plain", input="look it up", tools=tools, tool_choice="required", previous_response_id=r3.id
    )
    call = next(o for o in r4.output if o.type == "function_call")
    raw5 = client.responses.with_raw_response.create(
        model="plain",
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "42"}],
        previous_response_id=r4.id,
    )
    r5 = raw5.parse()
    got = tap.bodies[-1]["messages"]
    assert got[:6] == [*convo, _user("Again?"), _echo("Again?")] and got[6] == _user("look it up")
    assert got[7]["role"] == "assistant" and got[7]["tool_calls"][0]["id"] == call.call_id
    assert got[7]["tool_calls"][0]["function"]["name"] == "lookup"
    assert got[8] == {"role": "tool", "tool_call_id": call.call_id, "content": "42"} and len(got) == 9
    assert r5.status == "completed"

    # one trajectory, steps 0..4, and the recorded steps rebuild exactly what the backend last received
    assert raw2.headers["x-sluice-trajectory-id"] == tid == raw5.headers["x-sluice-trajectory-id"]
    assert raw5.headers["x-sluice-step-index"] == "4"
    steps = sorted((e for e in proxy.events(5) if isinstance(e, StepEvent)), key=lambda e: e.step_index)
    assert [(s.trajectory_id, s.step_index) for s in steps] == [(tid, i) for i in range(5)]
    assert steps[2].metadata.stream
    # where the system message stayed the same, a step records only what is new since the last one
    assert steps[1].observation.prefix_message_count == 3 and len(steps[1].observation.messages) == 1
    assert steps[4].observation.prefix_message_count == 8 and len(steps[4].observation.messages) == 1
    rebuilt = reconstruct_messages(steps)
    assert [m.role for m in rebuilt[:-1]] == [m["role"] for m in got]
    assert rebuilt[-2].content == "42"


def test_unknown_expired_foreign_or_unstored_ids_get_the_api_error_never_a_500(proxy: LiveProxy) -> None:
    acme = openai.OpenAI(base_url=proxy.url + "/v1", api_key=KEY, max_retries=0)
    globex = openai.OpenAI(base_url=proxy.url + "/v1", api_key=KEY_GLOBEX, max_retries=0)
    first = acme.responses.create(model="plain", input="private to acme")
    unstored = acme.responses.create(model="plain", input="forget me", store=False)
    assert unstored.store is False
    for client, rid in ((acme, "resp_does_not_exist"), (globex, first.id), (acme, unstored.id)):
        with pytest.raises(openai.BadRequestError) as err:
            client.responses.create(model="plain", input="go on", previous_response_id=rid)
        assert err.value.status_code == 400 and err.value.code == "previous_response_not_found"
        assert err.value.param == "previous_response_id" and rid in err.value.message
    with pytest.raises(openai.BadRequestError) as err:  # streaming: the error comes before the stream
        acme.responses.create(model="plain", input="go on", previous_response_id="resp_nope", stream=True)
    assert err.value.code == "previous_response_not_found"
    # acme's own continuation still works
    assert acme.responses.create(model="plain", input="go on", previous_response_id=first.id).output_text


def test_an_erasure_drops_the_chains_of_the_erased_trajectory(proxy: LiveProxy) -> None:
    cfg = proxy.config
    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key=KEY, max_retries=0)
    gone = client.responses.with_raw_response.create(model="plain", input="erase this conversation")
    kept = client.responses.create(model="plain", input="keep this one")
    tid = gone.headers["x-sluice-trajectory-id"]
    event = ErasureEvent(erasure_id="e-chains", scope="trajectory", target=tid, trajectory_id=tid)
    producer = Producer(cfg.broker.producer_config())
    producer.produce(cfg.topics.name("erasure"), key=tid.encode(), value=event.model_dump_json())
    assert producer.flush(10) == 0
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the proxy reads the erasure topic on its own
        if len(proxy.app.state.sluice.response_chains) == 1:
            break
        time.sleep(0.2)
    with pytest.raises(openai.BadRequestError) as err:
        client.responses.create(model="plain", input="go on", previous_response_id=gone.parse().id)
    assert err.value.code == "previous_response_not_found"
    assert client.responses.create(model="plain", input="go on", previous_response_id=kept.id).output_text
