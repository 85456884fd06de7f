"""`sluice serve-model` (tiny model, a real process) takes weight updates: versions on every response,
swaps under concurrent requests that drop or corrupt nothing, refusals, rollback, and the event log.

"Not corrupted" is checked token by token: every response's sampled logprobs must match a full forward pass
of the version the response names (and must not match the other version), so a response decoded partly by
one version and partly by another fails.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import torch
from safetensors.torch import save_file

from sluice.policy_client import BadWeights, PolicyClient, VersionConflict, VersionNotKept
from trainers.generation import sequence_logprobs
from trainers.serving.policy_events import read_events
from trainers.tiny_model import build_tiny

from .serve_process import ServeProcess, serve_model

MODEL = "sluice-tiny"
LAYER = "model.layers.0.mlp.up_proj.weight"
TOL = 2e-3


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    with serve_model(tmp_path_factory.mktemp("policy"), MODEL, {"keep_versions": 3, "max_batch": 8}) as proc:
        yield proc


@pytest.fixture(scope="module")
def versions() -> dict[str, torch.nn.Module]:
    """What each pushed version is, as a model in this process."""
    base = build_tiny()[0]
    perturbed = build_tiny()[0]
    gen = torch.Generator().manual_seed(11)
    with torch.no_grad():
        for p in perturbed.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 0.05)
    return {"0": base, "1": perturbed}


def chat_body(prompt: str, stream: bool, **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": [{"role": "user", "content": prompt}], "max_tokens": 12,
            "temperature": 1.0, "seed": 5, "logprobs": True, "return_token_ids": True, "stream": stream,
            **extra}  # fmt: skip


async def chat(
    client: httpx.AsyncClient, body: dict[str, Any], headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """One request; its versions (header, extension fields, fallback header), prompt ids, token ids and
    logprobs."""
    if not body["stream"]:
        r = await client.post("/v1/chat/completions", json=body, headers=headers)
        assert r.status_code == 200, r.text
        data = r.json()
        ch = data["choices"][0]
        return {"header": r.headers["x-sluice-policy-version"], "ext": [data["sluice"]],
                "fallback": r.headers.get("x-sluice-policy-fallback"),
                "prompt": data["prompt_token_ids"], "ids": ch["token_ids"],
                "lps": [e["logprob"] for e in ch["logprobs"]["content"]]}  # fmt: skip
    out: dict[str, Any] = {"ext": [], "ids": [], "lps": [], "chunks": []}
    async with client.stream("POST", "/v1/chat/completions", json=body, headers=headers) as r:
        assert r.status_code == 200
        out["header"] = r.headers["x-sluice-policy-version"]
        out["fallback"] = r.headers.get("x-sluice-policy-fallback")
        async for line in r.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            out["chunks"].append(chunk)
            if "sluice" in chunk:
                out["ext"].append(chunk["sluice"])
            if "prompt_token_ids" in chunk:
                out["prompt"] = chunk["prompt_token_ids"]
            for ch in chunk.get("choices", []):
                out["ids"] += ch.get("token_ids") or []
                out["lps"] += [e["logprob"] for e in (ch.get("logprobs") or {}).get("content", [])]
    return out


def served_by(resp: dict[str, Any], models: dict[str, torch.nn.Module]) -> str:
    """The version whose forward pass reproduces the response's logprobs (exactly one must)."""
    assert resp["ids"] and len(resp["ids"]) == len(resp["lps"])
    matches = []
    for name, model in models.items():
        ref = sequence_logprobs(model, resp["prompt"], resp["ids"])
        if max(abs(a - b) for a, b in zip(ref, resp["lps"], strict=True)) < TOL:
            matches.append(name)
    assert len(matches) == 1, f"logprobs match versions {matches}"
    return matches[0]


def one_version(resp: dict[str, Any]) -> str:
    """The version a response names, checked to be the same in the header and every extension field."""
    names = {resp["header"]} | {e["policy_version"] for e in resp["ext"]}
    assert len(names) == 1 and all(e["policy_versions"] == [resp["header"]] for e in resp["ext"]), resp["ext"]
    fallbacks = {resp.get("fallback")} | {e.get("policy_fallback") for e in resp["ext"]}
    assert len(fallbacks) == 1, resp["ext"]  # the header and every extension field agree
    return resp["header"]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_every_response_names_the_serving_version(server: ServeProcess) -> None:
    async def go() -> None:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as c:
            plain = await chat(c, chat_body("abc", False))
            assert one_version(plain) == "0"
            streamed = await chat(c, chat_body("abc", True))
            assert one_version(streamed) == "0"
            chunks = streamed["chunks"]
            assert "sluice" in chunks[0] and "sluice" in chunks[-1]  # the first and the final chunk
            assert all("sluice" not in ch for ch in chunks[1:-1])
            usage = await chat(c, chat_body("abc", True, stream_options={"include_usage": True}))
            assert (
                usage["chunks"][-1]["choices"] == []
                and usage["chunks"][-1]["sluice"]["policy_version"] == "0"
            )
            r = await c.post(
                "/v1/completions", json={"model": MODEL, "prompt": ["ab", "cd"], "max_tokens": 3}
            )
            assert r.headers["x-sluice-policy-version"] == "0" and r.json()["sluice"]["policy_versions"] == [
                "0"
            ]
            async with c.stream("POST", "/v1/completions",
                                json={"model": MODEL, "prompt": "ab", "max_tokens": 3, "stream": True}) as s:  # fmt: skip
                lines = [json.loads(x[6:]) async for x in s.aiter_lines() if x.startswith("data: {")]
            assert s.headers["x-sluice-policy-version"] == "0"
            assert lines[0]["sluice"]["policy_version"] == "0" and lines[-1]["sluice"]["policy_versions"] == [
                "0"
            ]

    run(go())
    status = PolicyClient(server.url + "/v1").status()  # an OpenAI base URL works too
    assert (status.model, status.serving_version, status.versions) == (MODEL, "0", ["0"])
    assert [h.action for h in status.history] == ["load"]


def test_swap_under_concurrent_requests_drops_and_corrupts_nothing(
    server: ServeProcess, versions: dict[str, torch.nn.Module]
) -> None:
    client = PolicyClient(server.url)
    prompts = [f"q{i} {'xyz' * (i % 4)}" for i in range(6)]

    async def go() -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], Any]:
        async with httpx.AsyncClient(base_url=server.url, timeout=120) as c:
            first_token = asyncio.Event()

            async def watched() -> dict[str, Any]:
                body = chat_body("in flight", True)
                out: dict[str, Any] = {"ext": [], "ids": [], "lps": [], "chunks": []}
                async with c.stream("POST", "/v1/chat/completions", json=body) as r:
                    out["header"] = r.headers["x-sluice-policy-version"]
                    async for line in r.aiter_lines():
                        if line.startswith("data: {"):
                            chunk = json.loads(line[6:])
                            out["ext"] += [chunk["sluice"]] if "sluice" in chunk else []
                            out["prompt"] = chunk.get("prompt_token_ids", out.get("prompt"))
                            for ch in chunk["choices"]:
                                out["ids"] += ch.get("token_ids") or []
                                out["lps"] += [
                                    e["logprob"] for e in (ch.get("logprobs") or {}).get("content", [])
                                ]
                                if ch.get("token_ids"):
                                    first_token.set()
                return out

            in_flight = asyncio.create_task(watched())
            wave_a = [asyncio.create_task(chat(c, chat_body(p, i % 2 == 0))) for i, p in enumerate(prompts)]
            await first_token.wait()  # a request is being decoded now: the swap must wait for its batch
            push = asyncio.create_task(
                asyncio.to_thread(client.push_state_dict, versions["1"].state_dict(), "1")
            )
            wave_b = [asyncio.create_task(chat(c, chat_body(p, i % 2 == 1))) for i, p in enumerate(prompts)]
            reply = await push
            wave_c = [asyncio.create_task(chat(c, chat_body(p, i % 2 == 0))) for i, p in enumerate(prompts)]
            done = await asyncio.gather(in_flight, *wave_a, *wave_b, *wave_c)
            n = len(prompts)
            return [done[0], *done[1 : 1 + n]], done[1 + n : 1 + 2 * n], done[1 + 2 * n :], reply

    before, during, after, reply = run(go())
    assert reply.serving_version == "1" and reply.tensors == len(dict(versions["1"].named_parameters()))
    assert reply.swap_ms >= 0 and reply.versions == ["0", "1"]
    seen = []
    for resp in before + during + after:  # all 19 answered 200 (chat() asserts it)
        named = one_version(resp)
        assert served_by(resp, versions) == named  # decoded end to end by the version it names
        seen.append(named)
    assert before[0]["header"] == "0"  # the request in flight during the swap finished on the old weights
    assert {r["header"] for r in after} == {"1"}
    assert set(seen) == {"0", "1"}


def test_partial_push_from_a_file_refusals_and_rollback(
    server: ServeProcess, versions: dict[str, torch.nn.Module], tmp_path: Path
) -> None:
    client = PolicyClient(server.url)
    base = versions["0"].state_dict()
    partial = tmp_path / "layer0.safetensors"
    save_file({LAYER: base[LAYER] * 4}, str(partial))
    reply = client.push_file(partial, "2")
    assert (reply.serving_version, reply.tensors, reply.versions) == ("2", 1, ["0", "1", "2"])
    status = client.status()
    assert status.serving_version == "2" and [h.action for h in status.history] == [
        "load",
        "update",
        "update",
    ]

    with pytest.raises(VersionConflict):
        client.push_file(partial, "1")
    with pytest.raises(VersionConflict):
        client.push_state_dict({LAYER: base[LAYER]}, "0")
    with pytest.raises(BadWeights, match="unknown tensor names"):
        client.push_state_dict({"model.layers.99.mlp.up_proj.weight": base[LAYER]}, "3")
    with pytest.raises(BadWeights, match="shape"):
        client.push_state_dict({LAYER: base[LAYER][:2]}, "3")
    with pytest.raises(BadWeights, match="cannot read"):
        client.push_file(tmp_path / "missing.safetensors", "3")
    with pytest.raises(BadWeights, match="not a safetensors"):
        client.push_bytes(b"not tensors", "3")
    r = httpx.post(server.url + "/v1/policy/weights", content=b"x", headers={"content-type": "text/plain"})
    assert r.status_code == 400 and "content-type" in r.json()["error"]["message"]
    assert client.status().serving_version == "2"  # refusals changed nothing

    with pytest.raises(VersionNotKept):
        client.rollback("9")
    assert client.rollback("0").serving_version == "0"

    async def check() -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as c:
            return await chat(c, chat_body("after rollback", False))

    resp = run(check())
    assert one_version(resp) == "0" and served_by(resp, versions) == "0"
    # keep_versions=3 besides the base ("0", never evicted): the fourth push evicts the least recently
    # served ("1"), and "1" stays a used name
    assert client.push_state_dict({LAYER: base[LAYER] * 2}, "3").versions == ["1", "2", "0", "3"]
    assert client.push_state_dict({LAYER: base[LAYER] * 3}, "4").versions == ["2", "0", "3", "4"]
    with pytest.raises(VersionNotKept):
        client.rollback("1")
    with pytest.raises(VersionConflict):
        client.push_state_dict({LAYER: base[LAYER]}, "1")

    events = read_events(server.events_log)
    assert [(e.action, e.version, e.previous_version) for e in events] == [
        ("load", "0", None), ("update", "1", "0"), ("update", "2", "1"), ("rollback", "0", "2"),
        ("update", "3", "0"), ("update", "4", "3"),
    ]  # fmt: skip
    assert events[2].tensors == 1 and events[-1].kept_versions == ["2", "0", "3", "4"]
    assert all(e.server == server.url and e.model == MODEL for e in events)


def test_an_erasure_drops_the_token_history_of_its_conversations(server: ServeProcess) -> None:
    """The server remembers a conversation's text and ids for its next call; forgetting the conversation
    (what an erasure asks of every server) drops them, and a bad body is a 400 in the API's format."""

    async def go() -> None:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as c:
            for tid in ("acme~erased", "acme~kept"):
                await chat(c, chat_body("remember me", False), headers={"x-sluice-conversation": tid})

    run(go())
    client = PolicyClient(server.url)
    assert client.forget(["acme~erased"]) >= 1
    assert client.forget(["acme~erased"]) == 0
    assert client.forget(["acme~kept"]) >= 1
    bad = httpx.post(server.url + "/v1/policy/forget", json={"conversations": "acme~kept"}, timeout=30)
    assert bad.status_code == 400 and "error" in bad.json()
