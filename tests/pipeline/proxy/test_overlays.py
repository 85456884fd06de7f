"""Overlay assignments through the real broker and proxy, against a real backend that records what it got.

An assignment published with ``EvolutionPublisher`` reaches the proxy over the overlays topic; the
backend then receives the memory entry, the harness edit and the tool change on every surface (chat,
Anthropic messages, responses; streamed and not), the agent gets its own tool names back, and each step
on the raw topic carries the overlay's id and arm. A canary splits trajectories by a sticky hash.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.config import SluiceConfig
from infra.broker import LocalBroker
from pipeline.evolve.publish import EvolutionPublisher
from pipeline.proxy.control.overlay_routing import share_point
from pipeline.topics import create_topics
from sluice.events import StepEvent, scoped_trajectory_id
from sluice.evolution import (
    HarnessItem,
    LedgerEntry,
    MemoryEntry,
    Overlay,
    OverlayAssignment,
    ToolSchemaChange,
    harness_item_id,
)
from tests.conftest import make_config
from tests.pipeline.proxy.conftest import BACKEND_KEY, KEY, LiveProxy, proxy_section, serve
from tests.pipeline.proxy.recording_backend import RecordingBackend, recording_backend

SYSTEM = "You are a travel assistant.\nBe terse."
FACT = "The office is closed on Fridays."
RULE = "Always answer with the airport code."
CITY = {
    "type": "object",
    "properties": {"city_code": {"type": "string", "pattern": "^[A-Z]{3}$"}},
    "required": ["city_code"],
}
AGENT_TOOL = {"type": "object", "properties": {"city": {"type": "string"}}}


def travel_overlay(**kw: Any) -> Overlay:
    return Overlay(
        tenant="acme",
        task_id=kw.pop("task_id", "weather"),
        memory=[MemoryEntry(text=FACT)],
        harness_add=[HarnessItem(text=RULE)],
        harness_remove=[harness_item_id("Be terse.")],
        tools=[
            ToolSchemaChange(
                tool="get_weather",
                rename_to="lookup_weather",
                description="Weather by IATA code",
                parameters=CITY,
            )
        ],
        **kw,
    )


@pytest.fixture
def stack(broker: LocalBroker, tmp_path: Path) -> Iterator[tuple[LiveProxy, RecordingBackend, SluiceConfig]]:
    with recording_backend(BACKEND_KEY) as (url, backend):
        cfg = make_config(
            broker, tmp_path, proxy=proxy_section(url, tmp_path), up={"local_model_backend": None}
        )
        create_topics(cfg.broker, cfg.topics)
        with serve(cfg) as proxy:
            yield proxy, backend, cfg


def publish(cfg: SluiceConfig, proxy: LiveProxy, assignment: OverlayAssignment) -> OverlayAssignment:
    """Ledger entry first, then the assignment naming it; wait until the proxy has read it."""
    entry = LedgerEntry(
        proposal_id="pr-test",
        kind="canary" if assignment.candidate else "promotion",
        surface="memory",
        tenant=assignment.tenant,
        task_id=assignment.task_id,
        overlay_id=(assignment.candidate or assignment.active).overlay_id,  # type: ignore[union-attr]
    )
    assignment = assignment.model_copy(update={"ledger_entry_id": entry.entry_id})
    with EvolutionPublisher(cfg.broker, cfg.topics) as publisher:
        publisher.record(entry)
        publisher.assign(assignment)
        assert publisher.read_assignments()[assignment.key].event_id == assignment.event_id
    state = proxy.app.state.sluice
    deadline = time.monotonic() + 20
    while getattr(state.overlays.get(assignment.key), "event_id", None) != assignment.event_id:
        assert time.monotonic() < deadline, "the proxy did not read the assignment"
        time.sleep(0.05)
    return assignment


def chat_body(marker: str, stream: bool) -> dict[str, Any]:
    return {
        "model": "echo-1",
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"weather? {marker}"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {"name": "get_weather", "description": "W", "parameters": AGENT_TOOL},
            }
        ],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        "stream": stream,
    }


def anthropic_body(marker: str, stream: bool) -> dict[str, Any]:
    return {
        "model": "echo-1",
        "max_tokens": 64,
        "system": SYSTEM,
        "messages": [{"role": "user", "content": f"weather? {marker}"}],
        "tools": [{"name": "get_weather", "description": "W", "input_schema": AGENT_TOOL}],
        "tool_choice": {"type": "tool", "name": "get_weather"},
        "metadata": {"sluice_task_id": "weather"},
        "stream": stream,
    }


def responses_body(marker: str, stream: bool) -> dict[str, Any]:
    return {
        "model": "echo-1",
        "instructions": SYSTEM,
        "input": f"weather? {marker}",
        "tools": [{"type": "function", "name": "get_weather", "description": "W", "parameters": AGENT_TOOL}],
        "tool_choice": {"type": "function", "name": "get_weather"},
        "store": False,
        "stream": stream,
    }


SURFACES = {
    "chat": ("/v1/chat/completions", chat_body),
    "anthropic": ("/v1/messages", anthropic_body),
    "responses": ("/v1/responses", responses_body),
}


def tool_calls_for_agent(surface: str, stream: bool, resp: httpx.Response) -> tuple[list[str], str]:
    """The tool names the agent's SDK would see in this answer, and their arguments joined."""
    if not stream:
        data = resp.json()
        if surface == "chat":
            calls = [c["function"] for c in data["choices"][0]["message"]["tool_calls"]]
            return [c["name"] for c in calls], "".join(c["arguments"] for c in calls)
        if surface == "anthropic":
            blocks = [b for b in data["content"] if b["type"] == "tool_use"]
            return [b["name"] for b in blocks], "".join(json.dumps(b["input"]) for b in blocks)
        items = [o for o in data["output"] if o["type"] == "function_call"]
        return [o["name"] for o in items], "".join(o["arguments"] for o in items)
    events = [
        json.loads(line[6:])
        for line in resp.text.splitlines()
        if line.startswith("data: ") and line != "data: [DONE]"
    ]
    if surface == "chat":
        calls = [
            tc["function"]
            for e in events
            for c in e.get("choices", [])
            for tc in c["delta"].get("tool_calls") or []
        ]
        return [c["name"] for c in calls if c.get("name")], "".join(c.get("arguments", "") for c in calls)
    if surface == "anthropic":
        names = [e["content_block"]["name"] for e in events if e["type"] == "content_block_start"]
        parts = [e["delta"]["partial_json"] for e in events if e["type"] == "content_block_delta"]
        return names, "".join(parts)
    done = next(e for e in events if e["type"] == "response.completed")
    items = [o for o in done["response"]["output"] if o["type"] == "function_call"]
    return [o["name"] for o in items], "".join(o["arguments"] for o in items)


def test_assignment_changes_what_the_backend_receives_on_every_surface(stack) -> None:
    proxy, backend, cfg = stack
    overlay = travel_overlay()
    publish(cfg, proxy, OverlayAssignment(tenant="acme", task_id="weather", active=overlay))
    headers = {"authorization": f"Bearer {KEY}"}
    cases = [(surface, stream) for surface in SURFACES for stream in (False, True)]
    with httpx.Client(base_url=proxy.url, timeout=30) as client:
        for surface, stream in cases:
            path, build = SURFACES[surface]
            marker = f"{surface}-{'stream' if stream else 'json'}"
            task = {} if surface == "anthropic" else {"x-sluice-task-id": "weather"}  # anthropic: metadata
            resp = client.post(path, json=build(marker, stream), headers={**headers, **task})
            assert resp.status_code == 200, (marker, resp.text)
            names, arguments = tool_calls_for_agent(surface, stream, resp)
            assert names == ["get_weather"], marker
            assert "lookup_weather" not in resp.text, marker
            assert "city_code" in json.loads(arguments), marker  # the backend filled the overlay's parameters

            (got,) = backend.received(marker)
            system = got["messages"][0]
            assert system["role"] == "system", marker
            assert system["content"].splitlines() == [
                "You are a travel assistant.",
                RULE,
                "Facts to rely on:",
                f"- {FACT}",
            ], marker
            (tool,) = got["tools"]
            assert tool["function"] == {
                "name": "lookup_weather",
                "description": "Weather by IATA code",
                "parameters": CITY,
            }, marker
            assert got["tool_choice"]["function"]["name"] == "lookup_weather", marker

        # another task, no tenant-wide assignment: the bare agent, nothing recorded about overlays
        resp = client.post(
            "/v1/chat/completions",
            json=chat_body("untouched", False),
            headers={**headers, "x-sluice-task-id": "other"},
        )
        assert resp.status_code == 200
    (bare,) = backend.received("untouched")
    assert bare["messages"][0]["content"] == SYSTEM
    assert bare["tools"][0]["function"]["name"] == "get_weather"

    steps: list[StepEvent] = proxy.events(len(cases) + 1)
    assert len(steps) == len(cases) + 1
    overlaid = [s for s in steps if s.metadata.task_id == "weather"]
    assert len(overlaid) == len(cases)
    for s in overlaid:
        assert (s.metadata.overlay_id, s.metadata.overlay_arm) == (overlay.overlay_id, "control")
        # the observation is what the agent sent; the action has the agent's tool names
        assert s.observation.messages[0].role == "system"
        assert s.observation.messages[0].content == SYSTEM
        assert [t["function"]["name"] for t in s.observation.tools or []] == ["get_weather"]
        assert s.action.choices[0].message.tool_calls[0].name == "get_weather"
    (other,) = [s for s in steps if s.metadata.task_id == "other"]
    assert (other.metadata.overlay_id, other.metadata.overlay_arm) == (None, None)


def test_canary_splits_trajectories_sticky(stack) -> None:
    proxy, backend, cfg = stack
    candidate = Overlay(tenant="acme", memory=[MemoryEntry(text="CANARY FACT")])
    publish(cfg, proxy, OverlayAssignment(tenant="acme", active=None, candidate=candidate, canary_share=0.5))
    ids = [f"canary-{i}" for i in range(16)]
    expect = {
        tid: "candidate" if share_point(scoped_trajectory_id("acme", tid)) < 0.5 else "control" for tid in ids
    }
    assert set(expect.values()) == {"candidate", "control"}
    with httpx.Client(base_url=proxy.url, timeout=30) as client:
        for tid in ids:
            headers = {"authorization": f"Bearer {KEY}", "x-sluice-trajectory-id": tid}
            messages = [{"role": "user", "content": f"first [{tid}]"}]
            first = client.post(
                "/v1/chat/completions", json={"model": "echo-1", "messages": messages}, headers=headers
            )
            assert first.status_code == 200
            messages += [
                first.json()["choices"][0]["message"],
                {"role": "user", "content": f"second [{tid}]"},
            ]
            second = client.post(
                "/v1/chat/completions", json={"model": "echo-1", "messages": messages}, headers=headers
            )
            assert second.status_code == 200
    for tid in ids:
        for turn in ("first", "second"):
            (got,) = backend.received(f"{turn} [{tid}]")
            has_fact = any("CANARY FACT" in str(m.get("content")) for m in got["messages"])
            assert has_fact == (expect[tid] == "candidate"), (tid, turn)
    steps: list[StepEvent] = proxy.events(2 * len(ids))
    by_traj: dict[str, set[tuple[str | None, str | None]]] = {}
    for s in steps:
        by_traj.setdefault(s.trajectory_id, set()).add((s.metadata.overlay_id, s.metadata.overlay_arm))
    assert len(steps) == 2 * len(ids)
    for tid in ids:
        arm = expect[tid]
        want = (candidate.overlay_id if arm == "candidate" else None, arm)
        assert by_traj[scoped_trajectory_id("acme", tid)] == {want}, tid
