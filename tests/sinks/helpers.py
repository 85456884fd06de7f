"""Test helpers for the sink: a config file on the test broker, a real `sluice sink` subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import yaml
from confluent_kafka import Producer

from app.config import load_config
from infra.broker import LocalBroker, free_port
from pipeline.topics import create_topics
from sinks.settings import SinkSettings
from sluice.events import encode

REPO = Path(__file__).resolve().parents[2]
ACME_KEY = "sk-test-acme"
GLOBEX_KEY = "sk-test-globex"


def write_config(broker: LocalBroker, tmp_path: Path, **sink: Any) -> tuple[Path, SinkSettings]:
    """A YAML config on the test broker (unique topics, created), with two tenant keys."""
    data = {
        "broker": {
            "bootstrap_servers": broker.bootstrap_servers,
            "profile": "tansu",
            "embedded": False,
            "session_timeout_ms": 2000,
        },
        "topics": {"prefix": f"t{uuid.uuid4().hex[:10]}.", "partitions": 2},
        "proxy": {
            "spool_dir": str(tmp_path / "spool"),
            "api_keys": [
                {"key": ACME_KEY, "tenant": "acme"},
                {"key": GLOBEX_KEY, "tenant": "globex"},
            ],
        },
        "stages": {"data_dir": str(tmp_path / "stages")},
        "sink": {
            "database": str(tmp_path / "sluice.duckdb"),
            "query_port": free_port(),
            "batch_max_wait_s": 0.2,
            "lag_interval_s": 0.5,
            "progress_interval_s": 1.0,
            **sink,
        },
    }
    path = tmp_path / "sluice.yaml"
    path.write_text(yaml.safe_dump(data))
    cfg = load_config(path).sink_settings()
    create_topics(cfg.broker, cfg.topics)
    return path, cfg


def produce(cfg: SinkSettings, logical: str, records: list[tuple[str | None, bytes | None]]) -> None:
    producer = Producer(cfg.broker.producer_config())
    for key, value in records:
        producer.produce(cfg.topics.name(logical), key=key, value=value)
        producer.poll(0)
    assert producer.flush(30) == 0


def produce_trajectories(cfg: SinkSettings, trajectories: list[Any]) -> None:
    produce(cfg, "trajectories_audited", [(t.trajectory_id, encode(t)) for t in trajectories])


class SinkProcess:
    """`python -m app.cli sink --config PATH` as a child process."""

    def __init__(self, config_path: Path, cfg: SinkSettings, env: dict[str, str] | None = None) -> None:
        self.cfg = cfg
        self.log = config_path.parent / f"sink-{uuid.uuid4().hex[:6]}.log"
        self._log = self.log.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "sink", "--config", str(config_path)],
            cwd=REPO,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
        )
        self.url = f"http://{cfg.sink.query_host}:{cfg.sink.query_port}"

    def wait_ready(self, timeout_s: float = 60.0) -> SinkProcess:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"sink exited with {self.proc.returncode}:\n{self.output()}")
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=1) as resp:
                    if json.loads(resp.read()).get("ready"):
                        return self
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"sink not ready in {timeout_s}s:\n{self.output()}")

    def wait_exit(self, timeout_s: float = 60.0) -> int:
        try:
            return self.proc.wait(timeout_s)
        finally:
            self._log.close()

    def stop(self, timeout_s: float = 30.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.wait_exit(timeout_s)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.wait_exit()

    def output(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log.read_text(errors="replace")

    def metrics(self) -> str:
        with urllib.request.urlopen(self.url + "/metrics", timeout=5) as resp:
            return resp.read().decode()
