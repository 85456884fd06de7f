"""Proof under faults, through the real embedded default (broker, tiny model, proxy, stages, sink processes).

After each fault every trajectory sent is in DuckDB exactly once and no agent call failed; bad input gets a
clear 4xx or a dead letter while the pipeline keeps flowing; canary PII and secrets appear nowhere
downstream of the raw topic (DuckDB, redacted/audited/train topics, the spool, the logs). The stack is this
package's: the redaction-at-rest checks have run on it, so the canary scans cover their traffic too.
"""

from __future__ import annotations

import io
import os
import signal
import threading
import time
import uuid

import httpx
import pytest
from confluent_kafka import Producer
from pydantic import ValidationError
from rich.console import Console

from app.commands.demo import drive
from app.status import collect
from app.status_metrics import parse_metrics
from pipeline.demo.personas import canaries
from sluice.events import StepEvent, decode
from tests.kafka_helpers import read_topic
from tests.system.conftest import Stack

pytestmark = pytest.mark.slow


def test_the_demo_waits_for_its_trajectories_under_the_ids_the_proxy_gave(stack: Stack) -> None:
    """``sluice demo``'s driver and live display on the stack: it finds its trajectories under the ids the
    proxy answered (tenant-scoped, or the proxy's own for history-linked ones), late versions included."""
    out = io.StringIO()
    summary = drive(stack.cfg, 6, "sluice-tiny", Console(file=out, width=120), timeout_s=240, quiet=True)
    assert summary["trajectories"] == 6 and summary["llm calls failed"] == 0
    assert summary["identity mismatches"] == 0
    assert summary["steps"] == summary["llm calls ok"]
    assert summary["versions (all)"] > 6  # the late rewards made new versions, and the demo waited for them
    assert "6/6 trajectories in DuckDB" in out.getvalue()


def test_demo_traffic_lands_and_canaries_appear_nowhere(stack: Stack) -> None:
    report = stack.send(9, seed=1)
    assert report.calls_failed == [] and report.identity_mismatches == []
    assert all(400 <= status < 500 for status in report.malformed.values()), report.malformed
    stack.assert_exactly_once(report)
    late = [sc.trajectory_id for sc in report.scenarios if sc.reward == "late"]
    assert late
    versions = stack.query(
        "SELECT trajectory_id, version FROM trajectories WHERE trajectory_id IN ("
        + ", ".join(f"'{i}'" for i in late)
        + ")"
    )
    deadline = time.monotonic() + 60
    while any(r["version"] < 2 for r in versions) and time.monotonic() < deadline:
        time.sleep(0.5)
        versions = stack.query(
            "SELECT trajectory_id, version FROM trajectories WHERE trajectory_id IN ("
            + ", ".join(f"'{i}'" for i in late)
            + ")"
        )
    assert all(r["version"] >= 2 for r in versions), versions

    haystacks: dict[str, bytes] = {}
    tables = stack.query("SELECT table_name FROM information_schema.tables WHERE table_schema = 'store'")
    for t in tables:
        haystacks[f"duckdb:{t['table_name']}"] = repr(
            stack.query(f"SELECT * FROM store.{t['table_name']}")
        ).encode()
    for logical in ("steps_redacted", "trajectories_audited", "trajectories_train"):
        records = read_topic(stack.cfg.broker, stack.cfg.topics.name(logical), expect=1, timeout_s=15)
        haystacks[f"topic:{logical}"] = b"\n".join(v or b"" for _, v in records)
    spool = stack.cfg.path(stack.cfg.proxy.spool_dir)
    haystacks["spool"] = b"".join(p.read_bytes() for p in spool.rglob("*") if p.is_file())
    haystacks["logs"] = stack.log.getvalue().encode()
    assert len(haystacks["topic:trajectories_audited"]) > 0
    for where, blob in haystacks.items():
        for canary in canaries():
            assert canary.encode() not in blob, f"{canary!r} leaked into {where}"
        for key in stack.keys:
            assert key.encode() not in blob, f"an API key leaked into {where}"


def test_stage_worker_killed_mid_stream_loses_nothing(stack: Stack) -> None:
    result: dict = {}
    sender = threading.Thread(target=lambda: result.setdefault("report", stack.send(8, seed=2)))
    sender.start()
    time.sleep(2.0)
    victim = stack.stage_workers()[0]
    stack.sup.kill(victim)  # SIGKILL mid-stream; the other worker takes over its partitions meanwhile
    time.sleep(1.0)
    stack.sup.restart(victim)
    sender.join(180)
    report = result["report"]
    assert report.calls_failed == []
    stack.assert_exactly_once(report)


def test_sink_killed_between_write_and_commit(stack: Stack) -> None:
    stack.sup.restart("sink", env={"SLUICE_SINK_CRASH_AT": "before_commit:1"})
    report = stack.send(6, seed=3)
    assert report.calls_failed == []
    deadline = time.monotonic() + 60
    while "sink" not in stack.sup.dead() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "sink" in stack.sup.dead(), "the fault hook did not fire"
    stack.sup.restart("sink", env={"SLUICE_SINK_CRASH_AT": ""})
    stack.assert_exactly_once(report)


def test_bad_input_gets_clear_errors_and_dead_letters(stack: Stack) -> None:
    key = next(iter(stack.keys))
    auth = {"Authorization": f"Bearer {key}"}
    url = f"{stack.root}/v1/chat/completions"
    ok_body = {"model": "sluice-tiny", "messages": [{"role": "user", "content": "hi"}]}
    cases = {
        "malformed json": dict(content=b'{"model": ', headers={**auth, "content-type": "application/json"}),
        "wrong types": dict(json={"model": 7, "messages": {"role": "user"}}, headers=auth),
        "huge body": dict(content=b"x" * (stack.cfg.proxy.max_body_bytes + 1), headers=auth),
        "invalid utf-8": dict(
            content=b'{"model": "\xc3\x28"}', headers={**auth, "content-type": "application/json"}
        ),
        "unknown model": dict(json={**ok_body, "model": "gpt-nonexistent"}, headers=auth),
        "no key": dict(json=ok_body),
        "bad reward": dict(json={"value": "high"}, headers=auth),
    }
    with httpx.Client(timeout=30) as http:
        for name, kw in cases.items():
            target = f"{stack.root}/v1/trajectories/x/rewards" if name == "bad reward" else url
            resp = http.post(target, **kw)
            assert 400 <= resp.status_code < 500, (name, resp.status_code, resp.text)
            assert "error" in resp.json() and resp.json()["error"]["message"], (name, resp.text)
        anthropic = http.post(f"{stack.root}/v1/messages", json={"model": "sluice-tiny"}, headers=auth)
        assert 400 <= anthropic.status_code < 500 and anthropic.json()["type"] == "error"

    poison = {
        "not json": b"{not json",
        "invalid utf-8": b"\xff\xfe\x00",
        "fails validation": b'{"event_type": "step", "trajectory_id": "p1", "tenant": "acme", "step_index": -3}',
        "unknown event type": b'{"event_type": "mystery", "trajectory_id": "p2"}',
    }
    producer = Producer(stack.cfg.broker.producer_config())
    marker = uuid.uuid4().hex[:8]
    for i, value in enumerate(poison.values()):
        producer.produce(stack.cfg.topics.name("steps_raw"), key=f"poison-{marker}-{i}", value=value)
    assert producer.flush(10) == 0

    report = stack.send(3, seed=4)  # the pipeline keeps flowing
    stack.assert_exactly_once(report)
    deadline = time.monotonic() + 60
    dead: list[dict] = []
    while len(dead) < len(poison) and time.monotonic() < deadline:
        dead = stack.query(f"SELECT key, stage, reason FROM dead_letters WHERE key LIKE 'poison-{marker}-%'")
        time.sleep(0.5)
    assert len(dead) == len(poison), dead
    assert all(d["reason"] for d in dead)


def test_broker_outage_never_fails_the_agent_and_loses_nothing(stack: Stack) -> None:
    """The broker process is frozen (SIGSTOP: every connection to it hangs, as in a network partition or a
    stalled node) during agent traffic, then resumed with its state, as a durable cluster comes back.
    Every agent call succeeds during the outage, the proxy spools what it cannot deliver, and afterwards
    every step reaches the raw topic once the broker is back, so nothing the agent sent is lost; then every
    trajectory lands exactly once. (A real restart of the memory-backed local broker is a new, empty
    cluster; the proxy's replay into a restarted broker is proven in tests/pipeline/proxy.) Every member's
    session expires during the freeze, so the stage workers rebalance after it and must settle again."""
    stack.sup.signal("broker", signal.SIGSTOP)
    try:
        report = stack.send(6, seed=5)
        assert report.calls_failed == []
        deadline = time.monotonic() + 60
        depth = 0.0
        while depth == 0 and time.monotonic() < deadline:
            time.sleep(1.0)
            depth = parse_metrics(httpx.get(f"{stack.root}/metrics", timeout=5).text).get(
                "sluice_proxy_spool_depth", 0.0
            )
        assert depth > 0, "undeliverable events should wait in the spool while the broker is down"
    finally:
        stack.sup.signal("broker", signal.SIGCONT)
    want = {sc.trajectory_id: sc.turns for sc in report.scenarios}
    seen: dict[str, int] = {}
    deadline = time.monotonic() + 120
    while seen != want and time.monotonic() < deadline:
        seen = raw_steps(stack, want)
    assert seen == want, "every step the agent sent reaches the raw topic after the outage"
    stack.assert_exactly_once(report)


def raw_steps(stack: Stack, want: dict[str, int]) -> dict[str, int]:
    """Distinct step events per trajectory of ``want`` on the raw topic (what the proxy delivered)."""
    records = read_topic(
        stack.cfg.broker,
        stack.cfg.topics.name("steps_raw"),
        expect=sum(want.values()),
        timeout_s=30,
        idle_s=2,
    )
    steps: dict[str, set[int]] = {}
    for _key, value in records:
        try:
            event = decode(value)
        except ValidationError:  # the bad-input test's poison records
            continue
        if isinstance(event, StepEvent) and event.trajectory_id in want:
            steps.setdefault(event.trajectory_id, set()).add(event.step_index)
    return {tid: len(indexes) for tid, indexes in steps.items()}


def test_supervisor_restarts_crashed_services(stack: Stack) -> None:
    """A stage worker and the sink die by SIGKILL from outside (as the OOM killer would) while agents
    work: the supervisor of `sluice up` restarts both, says why, counts the restarts for `sluice status`,
    and every trajectory lands exactly once."""
    stop = threading.Event()
    supervisor = threading.Thread(target=stack.sup.supervise, args=(stop, 0.2), daemon=True)
    before = stack.sup.restarts()
    supervisor.start()
    try:
        result: dict = {}
        sender = threading.Thread(target=lambda: result.setdefault("report", stack.send(6, seed=6)))
        sender.start()
        time.sleep(1.5)
        victims = [stack.stage_workers()[-1], "sink"]
        for name in victims:
            os.kill(stack.sup.pid(name), signal.SIGKILL)
        sender.join(180)
        report = result["report"]
        assert report.calls_failed == []
        stack.assert_exactly_once(report)
        # the data can land before the backoff of a restart is over: wait for the supervisor's count
        stack.wait(
            lambda: all(stack.sup.restarts()[name] == before[name] + 1 for name in victims),
            f"one restart each of {victims}",
            timeout_s=60,
            seen=stack.sup.restarts,
        )
        after = stack.sup.restarts()
        services = collect(stack.cfg, interval_s=0).services
        assert all(services[name]["restarts"] == after[name] for name in victims), services
        assert all(services[name]["last_exit"] == "killed by SIGKILL" for name in victims), services
        assert all(f"{name} exited (killed by SIGKILL)" in stack.log.getvalue() for name in victims)
    finally:
        stop.set()
        supervisor.join(10)
