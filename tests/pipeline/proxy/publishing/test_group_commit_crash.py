"""kill -9 of the proxy in the middle of a burst of concurrent calls, with ``proxy.wal_fsync`` (responses
grouped behind one write and one fdatasync): every call answered before the kill reaches the raw topic
exactly once, and each trajectory's steps reach it in the order they were served (the group commit
writes records in append order; the restart replays the tail before anything newer)."""

from __future__ import annotations

import asyncio
import re
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

CLIENTS = 32
TURN = re.compile(r"^(burst-\d+-[0-9a-f]+) call (\d+)$")


async def _call(http: httpx.AsyncClient, tid: str, text: str) -> bool | None:
    """True: answered; False: cut off by the crash (it may have been recorded); None: the proxy was down
    (the call never reached it)."""
    body = {"model": "plain", "messages": [{"role": "user", "content": text}]}
    headers = {"Authorization": f"Bearer {KEY}", "x-sluice-trajectory-id": tid}
    try:
        r = await http.post("/v1/chat/completions", json=body, headers=headers)
    except httpx.ConnectError:
        return None
    except httpx.HTTPError:
        return False
    return r.status_code == 200 and bool(r.json()["choices"])


async def _bursts(url: str, stop: asyncio.Event, answered: list[str]) -> None:
    """Every client calls at the same moment, round after round; each client is one trajectory whose
    calls are numbered in the order they were sent (the next one only after the last one returned)."""
    tids = [f"burst-{n}-{uuid.uuid4().hex[:6]}" for n in range(CLIENTS)]
    calls = dict.fromkeys(tids, 0)
    limits = httpx.Limits(max_connections=CLIENTS)
    async with httpx.AsyncClient(base_url=url, timeout=10, limits=limits) as http:

        async def one(tid: str) -> None:
            text = f"{tid} call {calls[tid]}"
            result = await _call(http, tid, text)
            if result is None:
                await asyncio.sleep(0.05)
                return  # not sent: the same call again next round
            calls[tid] += 1
            if result:
                answered.append(text)

        while not stop.is_set():
            await asyncio.gather(*(one(t) for t in tids))


async def _until(answered: list[str], count: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while len(answered) < count and time.monotonic() < deadline:
        await asyncio.sleep(0.002)


async def _load(url: str, proxy: ProxyProcess, port: int) -> tuple[list[str], int]:
    stop = asyncio.Event()
    answered: list[str] = []
    load = asyncio.create_task(_bursts(url, stop, answered))
    await _until(answered, 120)
    await _until(answered, len(answered) + CLIENTS // 2)  # inside a burst: half of it answered
    proxy.proc.send_signal(signal.SIGKILL)
    proxy.proc.wait(10)
    killed_at = len(answered)
    await asyncio.to_thread(proxy.start, port)
    await _until(answered, killed_at + 2 * CLIENTS)
    stop.set()
    await load
    return answered, killed_at


def test_kill_9_mid_burst_keeps_order_and_loses_nothing(
    tmp_path: Path, broker: LocalBroker, echo_backend: str
) -> None:
    section = proxy_section(echo_backend, tmp_path, wal_fsync=True)
    port = section["port"]
    data = {
        "broker": {"bootstrap_servers": broker.bootstrap_servers, "profile": "tansu", "embedded": False},
        "topics": {"prefix": f"g{uuid.uuid4().hex[:8]}.", "partitions": 3},
        "proxy": section,
        "up": {"local_model_backend": None},
    }
    cfg = load_config(write_config(data, tmp_path / "sluice.yaml"))
    create_topics(cfg.broker, cfg.topics)
    proxy = ProxyProcess(tmp_path / "sluice.yaml", tmp_path / "proxy.log").start(port)
    try:
        answered, killed_at = asyncio.run(_load(f"http://127.0.0.1:{port}", proxy, port))
        deadline = time.monotonic() + 30
        while list((tmp_path / "spool").glob("*.seg")) and time.monotonic() < deadline:
            time.sleep(0.2)  # the restarted proxy replays the tail, then acknowledges everything
        records = read_topic(cfg.broker, cfg.topics.name("steps_raw"), expect=len(answered), idle_s=2)
    finally:
        if proxy.proc is not None:
            proxy.stop()
    assert 120 <= killed_at < len(answered), "calls were answered before and after the kill"
    texts = [
        e.observation.messages[-1].content
        for e in (decode(v) for _, v in records)
        if isinstance(e, StepEvent)
    ]  # partition order: one trajectory's steps in the order the topic holds them
    seen = Counter(texts)
    missing = [t for t in answered if seen[t] == 0]
    duplicated = {t: n for t, n in seen.items() if n > 1}
    assert missing == [], f"{len(missing)} of {len(answered)} answered calls never reached the raw topic"
    assert duplicated == {}, f"{len(duplicated)} steps reached the raw topic more than once"
    order: dict[str, list[int]] = {}
    for text in texts:
        match = TURN.match(text)
        assert match, text
        order.setdefault(match[1], []).append(int(match[2]))
    out_of_order = {tid: calls for tid, calls in order.items() if calls != sorted(calls)}
    assert out_of_order == {}, f"steps out of order on the topic: {list(out_of_order.items())[:3]}"
    assert len(order) == CLIENTS
