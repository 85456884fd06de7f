"""`sluice serve-model` (tiny model, a real process) serving several policy versions at once: a candidate is
served only to requests that name it, each request is decoded end to end by the version it names (its
logprobs match a forward pass of that version and no other), an unknown name falls back to the default and
says so, promote/discard/refusals, and a flood on one version does not starve another."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import torch

from sluice.policy_client import PolicyClient, VersionConflict, VersionNotKept
from trainers.serving.policy_events import read_events
from trainers.tiny_model import build_tiny

from .serve_process import ServeProcess, serve_model
from .test_policy_server import MODEL, chat, chat_body, one_version, served_by

PICK = "x-sluice-policy-version"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    extra = {"keep_versions": 2, "max_versions": 4, "max_batch": 2}
    with serve_model(tmp_path_factory.mktemp("candidates"), MODEL, extra) as proc:
        yield proc


@pytest.fixture(scope="module")
def models() -> dict[str, torch.nn.Module]:
    """What each version is, as a model in this process: "0" the base, "cand" every weight perturbed."""
    base, cand = build_tiny()[0], build_tiny()[0]
    gen = torch.Generator().manual_seed(23)
    with torch.no_grad():
        for p in cand.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 0.05)
    return {"0": base, "cand": cand}


def test_two_versions_served_at_once_each_request_by_the_one_it_names(
    server: ServeProcess, models: dict[str, torch.nn.Module]
) -> None:
    client = PolicyClient(server.url)
    reply = client.push_candidate_state_dict(models["cand"].state_dict(), "cand")
    assert (reply.serving_version, reply.version, reply.role, reply.parent) == ("0", "cand", "candidate", "0")
    assert reply.candidates == ["cand"] and reply.added_bytes > 0
    roles = client.roles()
    assert (roles["0"].role, roles["cand"].role, roles["cand"].parent) == ("default", "candidate", "0")

    async def go() -> list[tuple[str | None, dict[str, Any]]]:
        async with httpx.AsyncClient(base_url=server.url, timeout=120) as c:
            asks = [None, "cand", "0", "no-such-version"] * 3  # 12 requests at once, mixed versions
            jobs = [
                chat(c, chat_body(f"p{i}", i % 2 == 0), None if a is None else {PICK: a})
                for i, a in enumerate(asks)
            ]
            return list(zip(asks, await asyncio.gather(*jobs), strict=True))

    for asked, resp in asyncio.run(go()):  # every one answered 200 (chat() asserts it)
        named = one_version(resp)
        assert served_by(resp, models) == named  # decoded end to end by the version it names
        if asked == "no-such-version":  # not kept: the default answers, and says which was asked for
            assert named == "0" and resp["fallback"] == "no-such-version"
            assert all(e["policy_fallback"] == "no-such-version" for e in resp["ext"])
        else:
            # no header: the default (never the candidate)
            assert named == (asked or "0") and resp["fallback"] is None
    r = httpx.post(server.url + "/v1/completions", headers={PICK: "cand"},
                   json={"model": MODEL, "prompt": ["ab", "cd"], "max_tokens": 3})  # fmt: skip
    assert r.headers[PICK] == "cand" and r.json()["sluice"]["policy_versions"] == ["cand"]
    with httpx.stream("POST", server.url + "/v1/completions", headers={PICK: "gone"},
                      json={"model": MODEL, "prompt": "ab", "max_tokens": 3, "stream": True}) as s:  # fmt: skip
        assert s.headers[PICK] == "0" and s.headers["x-sluice-policy-fallback"] == "gone"
        assert '"policy_fallback":"gone"' in s.read().decode()
    assert httpx.get(server.url + "/health").json()["policy_version"] == "0"
    # the server's status counts what the default answered for a version it does not hold
    fallbacks = httpx.get(server.url + "/v1/policy").json()["fallbacks"]
    assert fallbacks["no-such-version"] == 3 and fallbacks["gone"] == 1 and "cand" not in fallbacks


def test_a_flood_on_one_version_does_not_starve_another(server: ServeProcess) -> None:
    """max_batch=2: ten default requests queue five batches; a candidate request sent after them all is
    decoded at the next turn, not after the flood."""
    assert "cand" in PolicyClient(server.url).status().candidates
    done: list[tuple[str, float]] = []

    async def one(c: httpx.AsyncClient, name: str, headers: dict[str, str] | None) -> None:
        body = {"model": MODEL, "messages": [{"role": "user", "content": name}], "max_tokens": 48,
                "temperature": 1.0, "seed": 1, "ignore_eos": True}  # fmt: skip
        r = await c.post("/v1/chat/completions", json=body, headers=headers)
        assert r.status_code == 200, r.text
        done.append((r.headers[PICK], time.monotonic()))

    async def go() -> None:
        async with httpx.AsyncClient(base_url=server.url, timeout=120) as c:
            flood = [asyncio.create_task(one(c, f"flood {i}", None)) for i in range(10)]
            await asyncio.sleep(0.2)  # the flood is queued (its first batch decoding)
            await asyncio.gather(one(c, "canary", {PICK: "cand"}), *flood)

    asyncio.run(go())
    order = [v for v, _ in sorted(done, key=lambda d: d[1])]
    assert order.count("0") == 10 and order.count("cand") == 1
    assert order.index("cand") <= 6, order  # FIFO would have put it last (index 10)


def test_promote_discard_and_refusals(server: ServeProcess, models: dict[str, torch.nn.Module]) -> None:
    client = PolicyClient(server.url)
    layer = "model.layers.0.mlp.up_proj.weight"
    base = models["0"].state_dict()[layer]
    over = client.push_candidate_state_dict({layer: base * 2}, "cand2", parent="cand")
    assert (over.role, over.parent, over.tensors) == ("candidate", "cand", 1)
    assert over.added_bytes == base.numel() * 4  # one fp32 matrix: the rest is shared with "cand"
    with pytest.raises(VersionNotKept):
        client.push_candidate_state_dict({layer: base}, "x", parent="nope")
    with pytest.raises(VersionConflict):  # names are never reused, candidates included
        client.push_candidate_state_dict({layer: base}, "cand")
    client.push_candidate_state_dict({layer: base * 3}, "cand3")
    status = client.status()
    assert status.versions == ["0", "cand", "cand2", "cand3"] and status.max_versions == 4
    with pytest.raises(VersionConflict, match="max_versions"):  # 4 held: a fifth is refused
        client.push_candidate_state_dict({layer: base}, "cand4")
    with pytest.raises(VersionConflict, match="default"):
        client.discard("0")
    with pytest.raises(VersionNotKept):
        client.discard("nope")
    with pytest.raises(VersionNotKept):
        client.promote("nope")
    gone = client.discard("cand3")
    assert gone.versions == ["0", "cand", "cand2"] and gone.role is None and gone.serving_version == "0"
    with pytest.raises(VersionConflict):  # a discarded name stays used
        client.push_candidate_state_dict({layer: base}, "cand3")

    promoted = client.promote("cand")
    assert (promoted.serving_version, promoted.role) == ("cand", "default")
    roles = {v: i.role for v, i in client.roles().items()}
    assert roles == {"0": "kept", "cand": "default", "cand2": "candidate"}

    async def plain() -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as c:
            return await chat(c, chat_body("after promote", False))

    resp = asyncio.run(plain())
    assert one_version(resp) == "cand" and served_by(resp, models) == "cand"  # no header: the new default
    assert client.rollback("0").serving_version == "0"  # rollback shares promote's path
    r = httpx.post(server.url + "/v1/policy/discard", json={"version": "0"})
    assert r.status_code == 409 and r.json()["error"]["type"] == "conflict_error"
    r = httpx.post(server.url + "/v1/policy/promote", json={"version": "zzz"})
    assert r.status_code == 404 and r.json()["error"]["type"] == "not_found_error"

    events = [(e.action, e.version, e.role, e.default_version) for e in read_events(server.events_log)]
    assert events == [
        ("load", "0", "default", "0"), ("update", "cand", "candidate", "0"), ("update", "cand2", "candidate", "0"),
        ("update", "cand3", "candidate", "0"), ("discard", "cand3", None, "0"), ("promote", "cand", "default", "cand"),
        ("rollback", "0", "default", "0"),
    ]  # fmt: skip
