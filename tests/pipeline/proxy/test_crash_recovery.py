"""kill -9 of the proxy under load: every call the agent received a complete answer for reaches the raw
topic exactly once (the write-ahead log is written before the answer completes, replayed at the next
start, and what the broker had already acknowledged is not sent twice), and trajectories that go on
across the crash keep their step numbering and record only what is new (the step journal)."""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from collections import Counter
from pathlib import Path

import httpx

from app.config import load_config
from infra.broker import LocalBroker
from pipeline.topics import create_topics
from sluice.events import StepEvent, decode
from tests.kafka_helpers import read_topic
from tests.pipeline.proxy.conftest import KEY, ProxyProcess, proxy_section, write_config

CLIENTS = 16


async def _call(
    http: httpx.AsyncClient, body: dict, headers: dict, stream: bool, stop: asyncio.Event
) -> bool:
    """True when the complete answer arrived. A refused connection (the proxy is down: the call never
    reached it) is retried until the proxy is back, so trajectories go on across the crash; a call cut off
    by the crash is not (it may have been recorded), the trajectory just goes on."""
    while not stop.is_set():
        try:
            if stream:
                async with http.stream("POST", "/v1/chat/completions", json=body, headers=headers) as r:
                    data = b"".join([c async for c in r.aiter_bytes()])
                return r.status_code == 200 and b"[DONE]" in data
            r = await http.post("/v1/chat/completions", json=body, headers=headers)
            return r.status_code == 200 and bool(r.json()["choices"])
        except httpx.ConnectError:
            await asyncio.sleep(0.05)
        except httpx.HTTPError:
            return False
    return False


async def _agent(url: str, client_no: int, stop: asyncio.Event, answered: list[str]) -> None:
    """One agent: trajectories of three calls each (explicit id, the whole history re-sent; every other
    call streamed). A call counts as answered when the complete answer arrived (the JSON body, or a
    stream up to ``[DONE]``)."""
    async with httpx.AsyncClient(base_url=url, timeout=10) as http:
        i = 0
        while not stop.is_set():
            tid = f"crash-{client_no}-{uuid.uuid4().hex[:8]}"
            headers = {"Authorization": f"Bearer {KEY}", "x-sluice-trajectory-id": tid}
            messages: list[dict] = []
            for turn in range(3):
                text = f"{tid} turn {turn}"
                messages.append({"role": "user", "content": text})
                stream = i % 2 == 1
                i += 1
                body = {"model": "plain", "messages": messages, "stream": stream}
                done = await _call(http, body, headers, stream, stop)
                if done:
                    answered.append(text)
                messages.append({"role": "assistant", "content": "ok"})


async def _until(answered: list[str], count: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while len(answered) < count and time.monotonic() < deadline:
        await asyncio.sleep(0.05)


async def _load(url: str, proxy: ProxyProcess, port: int) -> list[str]:
    stop = asyncio.Event()
    answered: list[str] = []
    agents = [asyncio.create_task(_agent(url, n, stop, answered)) for n in range(CLIENTS)]
    await _until(answered, 150)
    proxy.proc.send_signal(signal.SIGKILL)  # mid-load: requests in flight, events not yet acknowledged
    proxy.proc.wait(10)
    killed_at = len(answered)
    await asyncio.to_thread(proxy.start, port)
    await _until(answered, killed_at + 100)
    stop.set()
    await asyncio.gather(*agents)
    assert 0 < killed_at < len(answered), "load ran before and after the kill"
    return answered


def test_kill_9_under_load_loses_and_duplicates_nothing(
    tmp_path: Path, broker: LocalBroker, echo_backend: str
) -> None:
    section = proxy_section(echo_backend, tmp_path)
    port = section["port"]
    data = {
        "broker": {"bootstrap_servers": broker.bootstrap_servers, "profile": "tansu", "embedded": False},
        "topics": {"prefix": f"k{uuid.uuid4().hex[:8]}.", "partitions": 2},
        "proxy": section,
        "up": {"local_model_backend": None},
    }
    cfg = load_config(write_config(data, tmp_path / "sluice.yaml"))
    create_topics(cfg.broker, cfg.topics)
    proxy = ProxyProcess(tmp_path / "sluice.yaml", tmp_path / "proxy.log").start(port)
    try:
        answered = asyncio.run(_load(f"http://127.0.0.1:{port}", proxy, port))
        deadline = time.monotonic() + 30
        while proxy_depth(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.2)
        records = read_topic(cfg.broker, cfg.topics.name("steps_raw"), expect=len(answered), idle_s=2)
    finally:
        if proxy.proc is not None:
            proxy.stop()
    events = [e for e in (decode(v) for _, v in records) if isinstance(e, StepEvent)]
    by_text = Counter(e.observation.messages[-1].content for e in events)
    missing = [t for t in answered if by_text[t] == 0]
    duplicated = {t: n for t, n in by_text.items() if n > 1}
    indexes = Counter((e.trajectory_id, e.step_index) for e in events)
    collisions = {k: n for k, n in indexes.items() if n > 1}
    assert missing == [], f"{len(missing)} of {len(answered)} answered calls never reached the raw topic"
    assert duplicated == {}, f"{len(duplicated)} steps reached the raw topic more than once"
    assert collisions == {}, f"steps numbered twice after the restart: {list(collisions)[:5]}"
    continued = {e.trajectory_id for e in events if e.step_index > 0}
    assert len(answered) > 100 and continued, "trajectories went on across calls"
    # a step records what is new since the step before it, across the crash too (the journal keeps the
    # delta boundaries): no user message is recorded by two steps
    said = Counter(m.content for e in events for m in e.observation.messages if m.role == "user")
    again = {t: n for t, n in said.items() if n > 1}
    assert again == {}, f"steps recorded history an earlier step holds: {list(again)[:5]}"


def proxy_depth(tmp_path: Path) -> int:
    """Segment files the restarted proxy's log still holds (0 once it acknowledged everything)."""
    return len(list((tmp_path / "spool").glob("*.seg")))
