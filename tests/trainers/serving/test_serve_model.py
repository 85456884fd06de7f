"""`sluice serve-model` as a live process, driven by the real openai SDK."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
import yaml

from infra.broker import free_port, port_open


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("serve")
    cfg = tmp / "sluice.yaml"
    cfg.write_text(yaml.safe_dump({"trainer": {"output_dir": str(tmp / "trainer")}}))
    port = free_port()
    log = (tmp / "serve.log").open("wb")
    cmd = [sys.executable, "-m", "app.cli", "serve-model", "--config", str(cfg), "--port", str(port)]
    proc = subprocess.Popen(
        cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    deadline = time.monotonic() + 60
    while not port_open("127.0.0.1", port):
        assert proc.poll() is None, (tmp / "serve.log").read_text()
        assert time.monotonic() < deadline, "serve-model did not listen within 60 s"
        time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/v1"
    proc.terminate()  # SIGTERM: uvicorn shuts down cleanly
    assert proc.wait(timeout=20) == 0
    log.close()
    assert "serve-model ready" in (tmp / "serve.log").read_text()


@pytest.fixture(scope="module")
def client(server: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=server, api_key="unused")


MESSAGES = [{"role": "user", "content": "reverse 123"}]


def test_models(client: openai.OpenAI) -> None:
    assert [m.id for m in client.models.list().data] == ["sluice-tiny"]


def test_chat_token_ids_logprobs_and_n(client: openai.OpenAI) -> None:
    resp = client.chat.completions.create(
        model="sluice-tiny", messages=MESSAGES, max_tokens=6, n=3, logprobs=True, seed=7,
        extra_body={"return_token_ids": True},
    )  # fmt: skip
    body = resp.model_dump()
    assert len(resp.choices) == 3
    prompt_ids = body["prompt_token_ids"]
    assert prompt_ids and resp.usage.prompt_tokens == len(prompt_ids)
    for choice in body["choices"]:
        ids = choice["token_ids"]
        assert 1 <= len(ids) <= 6
        assert len(choice["logprobs"]["content"]) == len(ids)
        assert all(e["logprob"] <= 0 for e in choice["logprobs"]["content"])
        assert choice["finish_reason"] in ("stop", "length")
    assert resp.usage.completion_tokens == sum(len(c["token_ids"]) for c in body["choices"])
    again = client.chat.completions.create(
        model="sluice-tiny",
        messages=MESSAGES,
        max_tokens=6,
        n=3,
        seed=7,
        extra_body={"return_token_ids": True},
    )
    assert [c["token_ids"] for c in again.model_dump()["choices"]] == [
        c["token_ids"] for c in body["choices"]
    ]


def test_chat_streaming_matches_token_ids(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model="sluice-tiny", messages=MESSAGES, max_tokens=8, stream=True, seed=3,
        stream_options={"include_usage": True}, extra_body={"return_token_ids": True},
    )  # fmt: skip
    chunks = [c.model_dump() for c in stream]
    assert chunks[0]["prompt_token_ids"]
    ids = [t for c in chunks for ch in c["choices"] for t in (ch.get("token_ids") or [])]
    text = "".join(ch["delta"].get("content") or "" for c in chunks for ch in c["choices"])
    assert 1 <= len(ids) <= 8
    assert chunks[-1]["usage"]["completion_tokens"] == len(ids)
    finishes = [ch["finish_reason"] for c in chunks for ch in c["choices"] if ch["finish_reason"]]
    assert finishes in (["stop"], ["length"])
    plain = client.chat.completions.create(
        model="sluice-tiny", messages=MESSAGES, max_tokens=8, seed=3, extra_body={"return_token_ids": True}
    )
    assert plain.model_dump()["choices"][0]["token_ids"] == ids
    assert plain.choices[0].message.content == text


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search",
            "parameters": {
                "type": "object",
                "properties": {"limit": {"type": "integer"}, "query": {"type": "string", "maxLength": 3}},
                "required": ["query"],
            },
        },
    }
]


def test_forced_tool_call(client: openai.OpenAI) -> None:
    """The schema constrains the call (an integer, a maxLength): the arguments are decoded under it."""
    resp = client.chat.completions.create(
        model="sluice-tiny", messages=MESSAGES, max_tokens=64, tools=TOOLS, seed=1,
        tool_choice={"type": "function", "function": {"name": "search"}},
    )  # fmt: skip
    choice = resp.choices[0]
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]
    assert call.function.name == "search"
    args = json.loads(call.function.arguments)
    assert "query" in args and set(args) <= {"limit", "query"}
    assert isinstance(args["query"], str) and len(args["query"]) <= 3
    assert type(args.get("limit", 0)) is int

    stream = client.chat.completions.create(
        model="sluice-tiny", messages=MESSAGES, max_tokens=64, tools=TOOLS, seed=1, stream=True,
        tool_choice="required",
    )  # fmt: skip
    chunks = list(stream)
    fragments = [
        tc.function.arguments or "" for c in chunks for ch in c.choices for tc in ch.delta.tool_calls or []
    ]
    assert json.loads("".join(fragments)) == args  # same seed, same text, streamed as argument fragments
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


NESTED_TOOLS = [{"type": "function", "function": {"name": "plan_trip", "parameters": {
    "type": "object", "required": ["stops", "when", "budget"], "properties": {
        "stops": {"type": "array", "maxItems": 2, "items": {"type": "object", "required": ["city"],
                  "properties": {"city": {"type": "string", "maxLength": 4}}}},
        "when": {"type": "object", "required": ["day"], "properties": {"day": {"type": "integer", "maximum": 31}}},
        "budget": {"anyOf": [{"type": "boolean"}, {"type": "string", "enum": ["low", "high"]}]}}}}}]  # fmt: skip


def test_forced_tool_call_with_nested_objects_arrays_and_any_of(client: openai.OpenAI) -> None:
    """Real agents' tools nest: an array of objects, an object, an anyOf — decoded under the schema, streamed
    the same; a schema the engine cannot compile is a 400."""
    kwargs = dict(
        model="sluice-tiny", messages=MESSAGES, max_tokens=200, tools=NESTED_TOOLS, seed=3,
        tool_choice={"type": "function", "function": {"name": "plan_trip"}},
    )  # fmt: skip
    resp = client.chat.completions.create(**kwargs)
    assert resp.choices[0].finish_reason == "tool_calls"
    args = json.loads(resp.choices[0].message.tool_calls[0].function.arguments)
    assert set(args) == {"stops", "when", "budget"}
    assert len(args["stops"]) <= 2 and all(set(s) == {"city"} and len(s["city"]) <= 4 for s in args["stops"])
    assert type(args["when"]["day"]) is int and args["when"]["day"] <= 31
    assert type(args["budget"]) is bool or args["budget"] in ("low", "high")
    chunks = list(client.chat.completions.create(**kwargs, stream=True))
    frags = [
        tc.function.arguments or "" for c in chunks for ch in c.choices for tc in ch.delta.tool_calls or []
    ]
    assert json.loads("".join(frags)) == args
    bad = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": {"type": "string", "pattern": "("}}}}}]  # fmt: skip
    with pytest.raises(openai.BadRequestError, match="cannot be decoded"):
        client.chat.completions.create(**{**kwargs, "tools": bad, "tool_choice": "required"})


def test_forced_tool_call_with_free_text_argument(client: openai.OpenAI) -> None:
    """A schema of plain strings: the generated text becomes the first string parameter, as it is."""
    tools = [{"type": "function", "function": {"name": "note", "parameters": {
        "type": "object", "properties": {"text": {"type": "string"}}}}}]  # fmt: skip
    resp = client.chat.completions.create(
        model="sluice-tiny", messages=MESSAGES, max_tokens=5, tools=tools, seed=1, tool_choice="required"
    )
    args = json.loads(resp.choices[0].message.tool_calls[0].function.arguments)
    assert list(args) == ["text"] and isinstance(args["text"], str)
    assert resp.choices[0].finish_reason == "tool_calls"


def test_completions(client: openai.OpenAI) -> None:
    resp = client.completions.create(
        model="sluice-tiny",
        prompt="abc",
        max_tokens=4,
        logprobs=1,
        seed=2,
        extra_body={"return_token_ids": True},
    )
    body = resp.model_dump()["choices"][0]
    assert len(body["token_ids"]) == len(body["logprobs"]["token_logprobs"]) <= 4
    assert body["prompt_token_ids"] == [ord("a") - 32 + 6, ord("b") - 32 + 6, ord("c") - 32 + 6]
    streamed = client.completions.create(model="sluice-tiny", prompt="abc", max_tokens=4, seed=2, stream=True)
    assert "".join(c.choices[0].text for c in streamed) == resp.choices[0].text


def test_ignore_eos_decodes_to_max_tokens(client: openai.OpenAI) -> None:
    """Without ``ignore_eos`` the tiny model ends early on some seed; with it, every seed runs to the limit."""
    plain = [
        client.completions.create(model="sluice-tiny", prompt="a" * 8, max_tokens=200, seed=s)
        for s in range(8)
    ]
    assert any(r.choices[0].finish_reason == "stop" and r.usage.completion_tokens < 200 for r in plain)
    for seed in range(8):
        r = client.completions.create(model="sluice-tiny", prompt="a" * 8, max_tokens=200, seed=seed,
                                      extra_body={"ignore_eos": True})  # fmt: skip
        assert (r.choices[0].finish_reason, r.usage.completion_tokens) == ("length", 200)
        chat = client.chat.completions.create(model="sluice-tiny", messages=MESSAGES, max_tokens=60, seed=seed,
                                              extra_body={"ignore_eos": True})  # fmt: skip
        assert (chat.choices[0].finish_reason, chat.usage.completion_tokens) == ("length", 60)


def test_embeddings_are_the_models_own_and_stable(server: str, client: openai.OpenAI) -> None:
    texts = ["the invoice is overdue", "the invoice is overdue", "a cat sat on the mat"]
    got = client.embeddings.create(model="sluice-tiny", input=texts, encoding_format="float")
    vecs = [d.embedding for d in got.data]
    assert [d.index for d in got.data] == [0, 1, 2] and len({len(v) for v in vecs}) == 1
    assert all(abs(sum(x * x for x in v) - 1) < 1e-4 for v in vecs)  # unit length
    assert vecs[0] == pytest.approx(vecs[1], abs=1e-6) and vecs[0] != pytest.approx(vecs[2], abs=1e-3)
    assert got.usage.prompt_tokens > len(texts)
    # the SDK's default (base64) decodes to the same vector; dimensions keeps the first values, rescaled
    short = client.embeddings.create(model="sluice-tiny", input=texts[0], dimensions=8)
    head = vecs[0][:8]
    norm = sum(x * x for x in head) ** 0.5
    assert short.data[0].embedding == pytest.approx([x / norm for x in head], abs=1e-5)
    by_ids = httpx.post(server + "/embeddings", json={"model": "sluice-tiny", "input": [[1, 2, 3]]})
    assert by_ids.status_code == 200 and by_ids.json()["usage"]["prompt_tokens"] == 3
    for bad in ({"input": ""}, {"input": [[10**9]]}, {"input": "x", "dimensions": 10**6}):
        resp = httpx.post(server + "/embeddings", json={"model": "sluice-tiny", **bad})
        assert resp.status_code == 400 and resp.json()["error"]["message"], bad


def test_tokenize_counts_the_prompt_the_model_reads(server: str, client: openai.OpenAI) -> None:
    root = server.removesuffix("/v1")
    counted = httpx.post(root + "/tokenize", json={"model": "sluice-tiny", "messages": MESSAGES}).json()
    assert counted["count"] == len(counted["tokens"]) > 0 and counted["max_model_len"] > counted["count"]
    # the same prompt a chat call reads: its usage says so
    resp = client.chat.completions.create(model="sluice-tiny", messages=MESSAGES, max_tokens=1)
    assert resp.usage.prompt_tokens == counted["count"]
    plain = httpx.post(root + "/tokenize", json={"model": "sluice-tiny", "prompt": "reverse 123"}).json()
    assert 0 < plain["count"] < counted["count"]
    both = httpx.post(root + "/tokenize", json={"model": "sluice-tiny", "prompt": "x", "messages": MESSAGES})
    assert both.status_code == 400


def test_bad_requests(server: str, client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    with pytest.raises(openai.BadRequestError, match="max_tokens"):
        client.chat.completions.create(model="sluice-tiny", messages=MESSAGES, max_tokens=100_000)
    r = httpx.post(f"{server}/chat/completions", content=b"{not json")
    assert r.status_code == 400 and "not valid JSON" in r.json()["error"]["message"]
    r = httpx.post(f"{server}/chat/completions", json={"model": "sluice-tiny", "messages": []})
    assert r.status_code == 400 and r.json()["error"]["param"] == "messages"


def test_unknown_fields_pass_through(server: str) -> None:
    r = httpx.post(
        f"{server}/chat/completions",
        json={"model": "sluice-tiny", "messages": MESSAGES, "max_tokens": 2, "frobnicate": 1},
    )
    assert r.status_code == 200 and r.headers["x-sluice-ignored-fields"] == "frobnicate"


def test_an_idle_connection_outlives_the_clients_pool_expiry(server: str) -> None:
    """The server keeps an idle connection open longer than its clients' pools keep it (httpx: 5 s), so
    no client sends on a connection the server is closing: after 6 s idle the same connection answers."""
    body = {"model": "sluice-tiny", "messages": MESSAGES, "max_tokens": 2}

    def local_port(r: httpx.Response) -> int:
        return r.extensions["network_stream"].get_extra_info("client_addr")[1]

    with httpx.Client(timeout=60, limits=httpx.Limits(keepalive_expiry=30)) as http:
        first = http.post(f"{server}/chat/completions", json=body)
        port = local_port(first)
        time.sleep(6)
        second = http.post(f"{server}/chat/completions", json=body)
        assert first.status_code == second.status_code == 200
        assert local_port(second) == port


def test_cli_rejects_bad_config(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"trainer": {"serve": {"port": "nope"}}}))
    out = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve-model", "--config", str(bad)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "trainer.serve.port" in out.stderr


def test_weights_resolution_prefers_explicit_then_latest_checkpoint(tmp_path: Path) -> None:
    from app.config import parse_config
    from trainers.checkpoint import TrainerState, save_checkpoint
    from trainers.serving.server import resolve_weights
    from trainers.tiny_model import build_tiny

    cfg = parse_config({"trainer": {"output_dir": "out"}}, base_dir=tmp_path)
    assert (
        resolve_weights(cfg.trainer_settings(), None) == "sluice-tiny"
    )  # nothing trained yet: the seeded model
    model, tok = build_tiny()
    save_checkpoint(tmp_path / "out", model, tok, TrainerState(step=3))
    newest = save_checkpoint(tmp_path / "out", model, tok, TrainerState(step=12))
    assert resolve_weights(cfg.trainer_settings(), None) == str(newest)
    assert resolve_weights(cfg.trainer_settings(), Path("elsewhere")) == str(tmp_path / "elsewhere")
