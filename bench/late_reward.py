"""Bytes a late reward costs on the broker, by trajectory length: a phase of ``bench.pipeline``.

Two trajectories through the proxy, one of 1 step and one of 50, each rewarded before its end so its first
version is already on the audited and the train topic; then one late reward each. What the stages write
for that reward to the audited and train topics (keys and values of every record keyed by the
trajectory, step records included) is counted by reading those topics from their ends before the
reward until the new version is queryable and the topics are quiet.
``late_reward_bytes_turn50_vs_turn1`` is the 50-step figure over the 1-step one: versions that re-send
every step grow ~50x; steps sent once per topic keep it flat (target <= 1.5). The join state's changelog
is not counted here (it holds ids, not content; ``bytes_per_pending_trajectory`` covers the state).

    python -m bench.pipeline --only late_reward
"""

from __future__ import annotations

import asyncio
import time
import uuid

from confluent_kafka import Consumer, TopicPartition

from pipeline.demo.summary import rows
from pipeline.topic_ends import TopicEnds
from sinks.clients import connect_client
from sluice.events import TENANT_SEP
from sluice.step_refs import key_trajectory_id

TURNS = (1, 50)


def _wait_version(client, tid: str, version: int, timeout_s: float = 120) -> int:
    """Wait until ``tid`` has a rewarded version at or past ``version`` in the store; returns it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = rows(client, f"SELECT version FROM trajectories WHERE trajectory_id = '{tid}' AND rewarded")
        if got and got[0]["version"] >= version:
            return got[0]["version"]
        time.sleep(0.2)
    raise TimeoutError(f"{tid}: no rewarded v{version} queryable after {timeout_s}s")


def _bytes_since(cfg, start: dict[tuple[str, int], int], tid: str) -> int:
    """Bytes (key + value) of the records keyed by ``tid`` (its own key or a step record's) written
    to the partitions of ``start`` since those offsets."""
    with TopicEnds(cfg.broker, timeout_s=5) as ends:
        stop = ends.end_offsets(start)
    todo = {tp: end for tp, end in stop.items() if end > start[tp]}
    if not todo:
        return 0
    consumer = Consumer(cfg.broker.consumer_config(f"bench-late-{uuid.uuid4().hex[:8]}"))
    consumer.assign([TopicPartition(t, p, start[(t, p)]) for t, p in todo])
    total, deadline = 0, time.monotonic() + 30
    try:
        while todo and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            tp = (msg.topic(), msg.partition())
            if tp in todo and msg.offset() < todo[tp]:
                key = (msg.key() or b"").decode()
                if key_trajectory_id(key) == tid:
                    total += len(msg.key() or b"") + len(msg.value() or b"")
                if msg.offset() + 1 >= todo[tp]:
                    del todo[tp]
    finally:
        consumer.close()
    return total


def phase_late_reward(cfg, agents_cls) -> dict:
    """The late-reward figures (``agents_cls``: the bench's HTTP agents)."""
    root = f"http://127.0.0.1:{cfg.proxy.port}"
    names = {n: f"lr{n}-{uuid.uuid4().hex[:10]}" for n in TURNS}
    scoped = {n: f"bench{TENANT_SEP}{name}" for n, name in names.items()}

    async def post(agents, name: str, reward: str) -> None:
        url = f"{root}/v1/trajectories/{name}/rewards"
        async with agents.session.post(url, json={"name": reward, "value": 1.0}) as resp:
            if resp.status >= 300:
                raise RuntimeError(f"reward answered {resp.status}")

    async def trajectory(agents, n: int) -> None:
        messages = [{"role": "system", "content": "You are a support agent."}]
        for turn in range(n):
            messages.append({"role": "user", "content": f"Order {turn} for jane.doe{turn}@example.com."})
            body = await agents.call(names[n], messages)
            messages.append(body["choices"][0]["message"])
        await post(agents, names[n], "score")  # rewarded at its end: version 1 trains
        await agents.end(names[n])

    async def run(coro_fn) -> None:
        agents = agents_cls(root, 4)
        try:
            await coro_fn(agents)
        finally:
            await agents.session.close()

    asyncio.run(run(lambda a: asyncio.gather(*(trajectory(a, n) for n in TURNS))))
    client = connect_client(cfg.sink_settings(), None)
    topics = [cfg.topics.name(t) for t in ("trajectories_audited", "trajectories_train")]
    parts = [(t, p) for t in topics for p in range(cfg.topics.partitions)]
    out: dict[str, float] = {}
    try:
        for n in TURNS:
            # rewarded, so on the train topic too (the reward may have joined after the end: then v2)
            version = _wait_version(client, scoped[n], 1)
            time.sleep(1.0)  # nothing more in flight for it
            with TopicEnds(cfg.broker, timeout_s=5) as ends:
                start = ends.end_offsets(parts)
            asyncio.run(run(lambda a, n=n: post(a, names[n], "late")))
            _wait_version(client, scoped[n], version + 1)
            time.sleep(1.0)  # the train topic's copy may land just after the audited one
            out[f"late_reward_bytes_turn{n}"] = _bytes_since(cfg, start, scoped[n])
    finally:
        client.close()
    first, last = out[f"late_reward_bytes_turn{TURNS[0]}"], out[f"late_reward_bytes_turn{TURNS[-1]}"]
    out["late_reward_bytes_turn50_vs_turn1"] = round(last / first, 2) if first else None
    return out
