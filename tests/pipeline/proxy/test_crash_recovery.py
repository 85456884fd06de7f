"""kill -9 of the proxy under load: every call the agent received a complete answer for reaches the raw
topic exactly once (the write-ahead log is written before the answer completes, replayed at the next
start, and what the broker had already acknowledged is not sent twice)."""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from collections import Counter
from pathlib import Path

import httpx

from infra.broker import LocalBroker
from pipeline.topics import create_topics
from sluice.config import load_config
from sluice.events import StepEvent, decode
from tests.kafka_helpers import read_topic
from tests.pipeline.proxy.conftest import KEY, ProxyProcess, proxy_section, write_config

CLIENTS = 16


async def _agent(url: str, client_no: int, stop: asyncio.Event, answered: list[str]) -> None:
    """One agent: calls in a loop (every other one streamed); a trajectory id per call. A call counts as
    answered when the complete answer arrived (the JSON body, or a stream up to ``[DONE]``)."""
    async with httpx.AsyncClient(base_url=url, timeout=10) as http:
        i = 0
        while not stop.is_set():
            tid = f"crash-{client_no}-{i}-{uuid.uuid4().hex[:6]}"
            stream = i % 2 == 1
            body = {"model": "plain", "messages": [{"role": "user", "content": tid}], "stream": stream}
            headers = {"Authorization": f"Bearer {KEY}", "x-sluice-trajectory-id": tid}
            i += 1
            try:
                if stream:
                    async with http.stream("POST", "/v1/chat/completions", json=body, headers=headers) as r:
                        text = b"".join([chunk async for chunk in r.aiter_bytes()])
                    if r.status_code == 200 and b"[DONE]" in text:
                        answered.append(tid)
                else:
                    r = await http.post("/v1/chat/completions", json=body, headers=headers)
                    if r.status_code == 200 and r.json()["choices"]:
                        answered.append(tid)
            except httpx.HTTPError:
                await asyncio.sleep(0.05)  # the proxy is down: try again shortly


async def _load(url: str, proxy: ProxyProcess, port: int) -> list[str]:
    stop = asyncio.Event()
    answered: list[str] = []
    agents = [asyncio.create_task(_agent(url, n, stop, answered)) for n in range(CLIENTS)]
    await asyncio.sleep(3.0)
    proxy.proc.send_signal(signal.SIGKILL)  # mid-load: requests in flight, events not yet acknowledged
    proxy.proc.wait(10)
    killed_at = len(answered)
    await asyncio.to_thread(proxy.start, port)
    await asyncio.sleep(2.0)
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
    on_topic = Counter(
        e.trajectory_id for e in map(decode, (v for _, v in records)) if isinstance(e, StepEvent)
    )
    missing = [t for t in answered if on_topic[t] == 0]
    duplicated = {t: n for t, n in on_topic.items() if n > 1}
    assert missing == [], f"{len(missing)} of {len(answered)} answered calls never reached the raw topic"
    assert duplicated == {}, f"{len(duplicated)} steps reached the raw topic more than once"
    assert len(answered) > 100


def proxy_depth(tmp_path: Path) -> int:
    """Segment files the restarted proxy's log still holds (0 once it acknowledged everything)."""
    return len(list((tmp_path / "spool").glob("*.seg")))
