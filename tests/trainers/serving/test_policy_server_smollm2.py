"""The real instruct model (SmolLM2-135M-Instruct) behind `sluice serve-model` takes partial and full weight
updates and rolls back: greedy answers change with the weights and come back with them."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from safetensors import safe_open
from safetensors.torch import save_file

from sluice.policy_client import PolicyClient, VersionNotKept
from trainers.smollm2 import SMOLLM2_NAME, smollm2_dir

from .serve_process import ServeProcess, serve_model

NORM = "model.norm.weight"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    smollm2_dir()  # the one-time GGUF conversion happens here, not inside the server's start timeout
    with serve_model(tmp_path_factory.mktemp("smol"), SMOLLM2_NAME, {"keep_versions": 2}) as proc:
        yield proc


def answer(server: ServeProcess) -> tuple[str, str]:
    body = {"model": SMOLLM2_NAME, "messages": [{"role": "user", "content": "What is the capital of France?"}],
            "max_tokens": 8, "temperature": 0}  # fmt: skip
    r = httpx.post(server.url + "/v1/chat/completions", json=body, timeout=120)
    assert r.status_code == 200, r.text
    return r.headers["x-sluice-policy-version"], r.json()["choices"][0]["message"]["content"]


def test_partial_and_full_updates_and_rollback(server: ServeProcess, tmp_path_factory) -> None:  # noqa: ANN001
    client = PolicyClient(server.url)
    version, base_text = answer(server)
    assert version == "0" and base_text
    weights = next(smollm2_dir().glob("*.safetensors"))
    with safe_open(str(weights), "pt") as f:
        norm = f.get_tensor(NORM)
        names = list(f.keys())

    partial = client.push_state_dict({NORM: -norm}, "1")  # one tensor, sent as bytes
    assert (partial.serving_version, partial.tensors) == ("1", 1)
    version, flipped = answer(server)
    assert version == "1" and flipped != base_text

    full = client.push_file(weights, "2")  # every tensor, read by the server from its file
    assert full.serving_version == "2" and full.tensors == len(names) and full.versions == ["0", "1", "2"]
    assert answer(server) == ("2", base_text)

    assert client.rollback("1").serving_version == "1"
    assert answer(server) == ("1", flipped)
    fixed = tmp_path_factory.mktemp("w") / "norm.safetensors"
    save_file({NORM: norm}, str(fixed))
    assert client.push_file(fixed, "3").tensors == 1
    assert answer(server) == ("3", base_text)
    with pytest.raises(VersionNotKept):  # keep_versions=2 besides the base: "3" evicted "2"
        client.rollback("2")
    assert client.rollback("0").serving_version == "0"  # the base is never evicted


def test_forced_tool_arguments_end_at_the_end_of_turn(server: ServeProcess) -> None:
    """SmolLM2 closes its turn with ``<|im_end|>``; a forced call's argument stops there, streamed or not."""
    tools = [{"type": "function", "function": {"name": "lookup_order", "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string"}}}}}]  # fmt: skip
    body = {"model": SMOLLM2_NAME, "max_tokens": 24, "temperature": 0, "tools": tools,
            "tool_choice": {"type": "function", "function": {"name": "lookup_order"}},
            "messages": [{"role": "system", "content": "Reply with the order id only."},
                         {"role": "user", "content": "Has ORD-33470 shipped?"}]}  # fmt: skip
    r = httpx.post(server.url + "/v1/chat/completions", json=body, timeout=120)
    assert r.status_code == 200, r.text
    call = r.json()["choices"][0]["message"]["tool_calls"][0]["function"]
    value = json.loads(call["arguments"])["order_id"]
    assert value and "<|" not in value and "33470" in value
    with httpx.stream("POST", server.url + "/v1/chat/completions", json={**body, "stream": True},
                      timeout=120) as resp:  # fmt: skip
        lines = [ln[6:] for ln in resp.iter_lines() if ln.startswith("data: ") and ln != "data: [DONE]"]
    frags = [
        tc["function"].get("arguments", "")
        for ln in lines
        for ch in json.loads(ln)["choices"]
        for tc in ch["delta"].get("tool_calls") or []
    ]
    assert json.loads("".join(frags)) == {"order_id": value}


def test_forced_tool_arguments_follow_the_schema_through_the_openai_sdk(server: ServeProcess) -> None:
    """A forced call whose parameters carry an enum and a pattern: SmolLM2's arguments parse, the enum
    value is one of the listed ones, the date matches the pattern; streamed fragments give the same."""
    import openai

    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused")
    tools = [{"type": "function", "function": {"name": "book_meeting", "parameters": {
        "type": "object", "required": ["date", "room"], "properties": {
            "date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
            "room": {"type": "string", "enum": ["Atlas", "Borealis", "Cygnus"]}}}}}]  # fmt: skip
    kwargs = dict(
        model=SMOLLM2_NAME, max_tokens=40, temperature=0, tools=tools,
        tool_choice={"type": "function", "function": {"name": "book_meeting"}},
        messages=[{"role": "user", "content": "Book room Borealis for the review on March 14, 2026."}],
    )  # fmt: skip
    resp = client.chat.completions.create(**kwargs)
    choice = resp.choices[0]
    assert choice.finish_reason == "tool_calls"
    args = json.loads(choice.message.tool_calls[0].function.arguments)
    assert set(args) == {"date", "room"}
    assert args["room"] in ("Atlas", "Borealis", "Cygnus")
    assert len(args["date"]) == 10 and args["date"][4] == "-" and args["date"][7] == "-"
    assert args["date"].replace("-", "").isdigit()
    chunks = list(client.chat.completions.create(**kwargs, stream=True))
    frags = [
        tc.function.arguments or "" for c in chunks for ch in c.choices for tc in ch.delta.tool_calls or []
    ]
    assert json.loads("".join(frags)) == args
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_a_candidate_serves_beside_the_default(server: ServeProcess) -> None:
    """A candidate (the final norm flipped, laid over the default) answers the requests that name it while
    the default answers the rest, concurrently; greedy answers differ between the two and not within one."""
    import asyncio

    client = PolicyClient(server.url)
    default = client.status().serving_version
    weights = next(smollm2_dir().glob("*.safetensors"))
    with safe_open(str(weights), "pt") as f:
        norm = f.get_tensor(NORM)
    reply = client.push_candidate_state_dict({NORM: -norm}, "smol-cand")
    assert (reply.serving_version, reply.role, reply.parent, reply.added_bytes) == (
        default, "candidate", default, norm.numel() * 4
    )  # fmt: skip
    body = {"model": SMOLLM2_NAME, "messages": [{"role": "user", "content": "What is the capital of France?"}],
            "max_tokens": 8, "temperature": 0}  # fmt: skip

    async def go() -> list[tuple[str, str]]:
        async with httpx.AsyncClient(base_url=server.url, timeout=120) as c:
            asks = [{}, {"x-sluice-policy-version": "smol-cand"}] * 3
            rs = await asyncio.gather(*(c.post("/v1/chat/completions", json=body, headers=h) for h in asks))
        assert all(r.status_code == 200 for r in rs)
        return [
            (r.headers["x-sluice-policy-version"], r.json()["choices"][0]["message"]["content"]) for r in rs
        ]

    answers = asyncio.run(go())
    by_version: dict[str, set[str]] = {}
    for version, text in answers:
        by_version.setdefault(version, set()).add(text)
    assert set(by_version) == {default, "smol-cand"}
    assert len(by_version[default]) == 1 and len(by_version["smol-cand"]) == 1  # one version per batch
    assert by_version[default] != by_version["smol-cand"]
    assert client.discard("smol-cand").versions == client.status().versions
    assert answer(server)[0] == default
