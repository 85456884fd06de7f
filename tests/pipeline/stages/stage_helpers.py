"""Helpers for the stage end-to-end tests: a worker subprocess, a producer, a topic tail."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import yaml
from confluent_kafka import Consumer, KafkaError, Producer
from pydantic import BaseModel

from app.config import SluiceConfig
from sluice.events import Trajectory, TrajectoryStep, decode, encode
from sluice.trajectory_refs import StepCache

REPO = Path(__file__).resolve().parents[3]
READY = "sluice stages ready"
PARTITIONS = re.compile(r"sluice stages ready: .*partitions=\[([0-9, ]*)\]")


def write_config(cfg: SluiceConfig, path: Path) -> Path:
    data = json.loads(cfg.model_dump_json())
    for section in ("redaction",):  # SecretStr dumps masked: keep the test's own value out of it
        data[section].pop("hash_key", None)
    path.write_text(yaml.safe_dump(data))
    return path


class StageWorker:
    """``sluice stages --config FILE`` as a subprocess, its log in a file."""

    def __init__(self, config_file: Path, log_file: Path) -> None:
        self.config_file = config_file
        self.log_file = log_file
        self.proc: subprocess.Popen[bytes] | None = None
        self._log_start = 0

    def start(self, timeout_s: float = 120.0) -> StageWorker:
        """Start the worker and wait until it is ready."""
        self.launch()
        self.wait_for_log(READY, timeout_s)
        return self

    def launch(self) -> StageWorker:
        """Start the worker without waiting (``wait_for_log(READY, ...)`` waits): workers launched together
        load at once and join their group in one rebalance."""
        self._log_start = self.log_file.stat().st_size if self.log_file.exists() else 0
        log = open(self.log_file, "ab")  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "stages", "--config", str(self.config_file)],
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        log.close()
        return self

    def partitions(self) -> str | None:
        """The partitions its last readiness line names (``"0, 1"``), None before the first."""
        found = PARTITIONS.findall(self.log_text())
        return found[-1] if found else None

    def log_text(self) -> str:
        with open(self.log_file, "rb") as f:
            f.seek(self._log_start)
            return f.read().decode(errors="replace")

    def wait_for_log(self, needle: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if needle in self.log_text():
                return
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"stage worker exited {self.proc.returncode}:\n{self.log_text()[-5000:]}")
            time.sleep(0.2)
        raise TimeoutError(
            f"no {needle!r} in the stage worker log within {timeout_s}s:\n{self.log_text()[-5000:]}"
        )

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def terminate(self, timeout_s: float = 60.0) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def producer(cfg: SluiceConfig) -> Producer:
    return Producer(cfg.broker.producer_config())


def send(
    p: Producer, cfg: SluiceConfig, logical: str, event: BaseModel | bytes, key: str | None = None
) -> None:
    value = event if isinstance(event, bytes) else encode(event)
    k = key if key is not None else getattr(event, "trajectory_id", None)
    p.produce(cfg.topics.name(logical), key=k.encode() if k is not None else None, value=value)


def wait_one_partition_each(a: StageWorker, b: StageWorker, timeout_s: float = 120.0) -> None:
    """Wait until the last readiness line of ``a`` and of ``b`` name one of the two partitions each."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if {a.partitions(), b.partitions()} == {"0", "1"}:
            return
        for w in (a, b):
            if w.proc is not None and w.proc.poll() is not None:
                raise RuntimeError(f"stage worker exited {w.proc.returncode}:\n{w.log_text()[-5000:]}")
        time.sleep(0.2)
    raise TimeoutError(f"the workers did not split the partitions: {a.partitions()!r}, {b.partitions()!r}")


class TopicTail:
    """Everything on some topics from the beginning, accumulated across polls (one consumer)."""

    def __init__(self, cfg: SluiceConfig, *topics: str) -> None:
        self.topics = topics
        self.records: list[tuple[str, bytes | None, bytes]] = []
        self._c = Consumer(cfg.broker.consumer_config(f"test-tail-{uuid.uuid4().hex[:8]}"))
        self._c.subscribe(list(topics))

    def poll(self, duration_s: float = 0.5) -> int:
        n = 0
        deadline = time.monotonic() + duration_s
        while time.monotonic() < deadline:
            msg = self._c.poll(0.1)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise RuntimeError(msg.error())
            self.records.append((msg.topic(), msg.key(), msg.value()))
            n += 1
        return n

    def drain(self, quiet_s: float = 2.0, timeout_s: float = 30.0) -> None:
        """Poll until something arrived and then nothing for ``quiet_s`` (or ``timeout_s`` passed)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.poll(quiet_s) == 0 and self.records:
                return

    def wait_until(self, predicate: Callable[[list[bytes]], bool], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.poll(0.3)
            if predicate(self.values()):
                return
        raise TimeoutError(
            f"{self.topics}: condition not met within {timeout_s}s ({len(self.records)} records)"
        )

    def values(self, topic: str | None = None) -> list[bytes]:
        return [v for t, _, v in self.records if topic is None or t == topic]

    def keys(self, topic: str | None = None) -> list[bytes]:
        return [k or b"" for t, k, _ in self.records if topic is None or t == topic]

    def close(self) -> None:
        self._c.close()


def versions_inline(values: list[bytes]) -> list[Trajectory]:
    """The trajectory versions among a topic's values, in order, with their steps inline (each step
    record precedes the first header that references it)."""
    cache, out = StepCache(), []
    for value in values:
        event = decode(value)
        if isinstance(event, TrajectoryStep):
            cache.add(event)
            continue
        assert isinstance(event, Trajectory)
        out.append(cache.resolve(event))
    return out
