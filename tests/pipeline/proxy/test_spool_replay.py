"""Broker down: the proxy keeps serving, spools to disk, survives its own restart (SIGTERM through the CLI),
and replays every event exactly once, in order, when the broker comes back on the same port."""

from __future__ import annotations

import uuid
from pathlib import Path

import openai

from app.config import load_config, parse_config
from infra.broker import LocalBroker, free_port
from pipeline.topics import create_topics
from sluice.events import StepEvent, decode
from tests.kafka_helpers import read_topic
from tests.pipeline.proxy.conftest import KEY, ProxyProcess, proxy_section, serve, write_config


def _call(port: int, text: str) -> str:
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, max_retries=0, timeout=10)
    reply = client.chat.completions.create(
        model="plain",
        messages=[{"role": "user", "content": text}],
        extra_headers={"x-sluice-trajectory-id": "replay-1"},
    )
    return reply.choices[0].message.content


def test_spool_survives_broker_outage_and_proxy_restart(tmp_path: Path, echo_backend: str) -> None:
    broker = LocalBroker(log_path=tmp_path / "tansu.log").start()
    section = proxy_section(echo_backend, tmp_path)
    port = section["port"]
    data = {
        "broker": {"bootstrap_servers": broker.bootstrap_servers, "profile": "tansu", "embedded": False},
        "topics": {"prefix": f"r{uuid.uuid4().hex[:8]}.", "partitions": 2},
        "proxy": section,
        "up": {"local_model_backend": None},
    }
    cfg_file = write_config(data, tmp_path / "sluice.yaml")
    cfg = load_config(cfg_file)
    create_topics(cfg.broker, cfg.topics)
    log = tmp_path / "proxy.log"
    proxy = ProxyProcess(cfg_file, log)
    try:
        proxy.start(port)
        assert "**********" in log.read_text() and KEY not in log.read_text()  # config logged, secrets masked
        broker.stop()
        sent = [f"while down {i}" for i in range(3)]
        assert [_call(port, t) for t in sent] == [f"Echo: {t}" for t in sent]
        assert proxy.stop() == 0  # SIGTERM: clean exit, undelivered events persisted
        segments = list((tmp_path / "spool").glob("*.seg"))
        assert segments, log.read_text()[-2000:]
        assert all(KEY.encode() not in s.read_bytes() for s in segments)

        proxy.start(port)  # restart while the broker is still down
        more = [f"after restart {i}" for i in range(2)]
        assert [_call(port, t) for t in more] == [f"Echo: {t}" for t in more]

        broker.start()  # same port, empty (memory storage): recreate the topics, then the spool replays
        create_topics(cfg.broker, cfg.topics)
        raw = read_topic(cfg.broker, cfg.topics.name("steps_raw"), expect=5, timeout_s=60, idle_s=1.5)
        events = [decode(v) for _, v in raw]
        assert all(isinstance(e, StepEvent) for e in events)
        assert len({e.event_id for e in events}) == len(events) == 5  # exactly once
        assert [e.step_index for e in events] == [
            0,
            1,
            2,
            3,
            4,
        ]  # in order, numbering kept across the restart
        assert [e.observation.messages[-1].content for e in events] == sent + more
        assert proxy.stop() == 0
        assert not list((tmp_path / "spool").glob("*.seg"))  # everything acknowledged: the spool is empty
        text = log.read_text()
        assert "wait in the write-ahead log" in text and "replaying" in text and KEY not in text
    finally:
        if proxy.proc is not None:
            proxy.stop()
        broker.stop()


def test_unreachable_broker_from_the_start_spools(tmp_path: Path, echo_backend: str) -> None:
    """A proxy started while the broker is down serves anyway and hands its events to the next start."""
    section = proxy_section(echo_backend, tmp_path)
    cfg = parse_config(
        {
            "broker": {"bootstrap_servers": f"127.0.0.1:{free_port()}", "embedded": False},
            "topics": {"prefix": "nowhere."},
            "proxy": section,
            "up": {"local_model_backend": None},
        }
    )
    with serve(cfg) as live:
        client = openai.OpenAI(base_url=live.url + "/v1", api_key=KEY, max_retries=0, timeout=10)
        for i in range(3):
            assert client.chat.completions.create(
                model="plain", messages=[{"role": "user", "content": str(i)}]
            ).choices
        stats = live.app.state.sluice.publisher.stats()
        assert stats.delivered == 0
    spool = live.app.state.sluice.publisher.wal
    assert spool.depth == 3 and list((tmp_path / "spool").glob("*.seg"))
