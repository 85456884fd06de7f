"""Fixtures of the proxy tests: a real echo backend process, a live proxy (uvicorn in a thread or the
``sluice proxy`` CLI in a subprocess), and reading step events back from the real broker."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn
import yaml

from app.config import SluiceConfig
from infra.broker import LocalBroker, free_port, port_open
from pipeline.proxy import create_app
from pipeline.topics import create_topics
from sluice.events import decode
from tests.conftest import make_config
from tests.kafka_helpers import read_topic

ROOT = Path(__file__).resolve().parents[3]
KEY = "sk-test-acme-0123456789"
KEY_GLOBEX = "sk-test-globex-9876543210"
BACKEND_KEY = "sk-upstream-secret-55555"


def wait_port(port: int, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not port_open("127.0.0.1", port):
        if time.monotonic() > deadline:
            raise TimeoutError(f"nothing listens on {port}")
        time.sleep(0.05)


@pytest.fixture(scope="session")
def echo_backend() -> Iterator[str]:
    """The echo backend as a real server process; requires the upstream key (proves the proxy sends its own)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "infra.echo_backend", "--port", str(port), "--api-key", BACKEND_KEY],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_port(port)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(10)


def proxy_section(echo_url: str, tmp_path: Path, **extra: Any) -> dict[str, Any]:
    return {
        "port": free_port(),
        "spool_dir": str(tmp_path / "spool"),
        "backends": [
            {
                "name": "echo-tokens",
                "base_url": echo_url,
                "models": ["tok-*"],
                "return_token_ids": True,
                "api_key": BACKEND_KEY,
                "model_version": "echo-v1",
            },
            {"name": "echo", "base_url": echo_url, "models": ["*"], "api_key": BACKEND_KEY},
        ],
        "api_keys": [
            {"key": KEY, "tenant": "acme", "data_class": "internal", "consent_training": True},
            {"key": KEY_GLOBEX, "tenant": "globex", "data_class": "confidential", "consent_training": False},
        ],
        "publish_timeout_ms": 2000,
        "probe_interval_s": 0.3,
        "shutdown_flush_s": 2.0,
        **extra,
    }


@pytest.fixture
def proxy_config(broker: LocalBroker, tmp_path: Path, echo_backend: str) -> SluiceConfig:
    cfg = make_config(
        broker, tmp_path, proxy=proxy_section(echo_backend, tmp_path), up={"local_model_backend": None}
    )
    create_topics(cfg.broker, cfg.topics)
    return cfg


@dataclass
class LiveProxy:
    config: SluiceConfig
    url: str
    app: Any

    def steps(self, expect: int) -> list[tuple[bytes, bytes]]:
        return read_topic(self.config.broker, self.config.topics.name("steps_raw"), expect, idle_s=0.5)

    def events(self, expect: int, topic: str = "steps_raw", idle_s: float = 0.5) -> list[Any]:
        """The events on ``topic`` once ``expect`` arrived and then none for ``idle_s``."""
        raw = read_topic(self.config.broker, self.config.topics.name(topic), expect, idle_s=idle_s)
        return [decode(v) for _, v in raw]


@contextlib.contextmanager
def serve(config: SluiceConfig) -> Iterator[LiveProxy]:
    """``create_app`` served by uvicorn in a thread of the test process."""
    app = create_app(config.proxy_settings())
    port = config.proxy.port
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            loop="uvloop",
            http="httptools",
            log_level="warning",
            access_log=False,
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("proxy did not start")
        time.sleep(0.02)
    try:
        yield LiveProxy(config, f"http://127.0.0.1:{port}", app)
    finally:
        server.should_exit = True
        thread.join(30)


@pytest.fixture
def live_proxy(proxy_config: SluiceConfig) -> Iterator[LiveProxy]:
    with serve(proxy_config) as proxy:
        yield proxy


def write_config(cfg_data: dict[str, Any], path: Path) -> Path:
    path.write_text(yaml.safe_dump(cfg_data))
    return path


class ProxyProcess:
    """``sluice proxy --config FILE`` as a real process (for signals and restarts)."""

    def __init__(self, config_file: Path, log_file: Path) -> None:
        self.config_file, self.log_file = config_file, log_file
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, port: int) -> ProxyProcess:
        log = open(self.log_file, "ab")  # noqa: SIM115 - handed to the child
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "proxy", "--config", str(self.config_file)],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + 30
        while "proxy ready on" not in self.log_file.read_text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("proxy process did not start:\n" + self.log_file.read_text()[-3000:])
            time.sleep(0.05)
        wait_port(port)
        return self

    def stop(self) -> int:
        assert self.proc is not None
        self.proc.terminate()  # SIGTERM
        code = self.proc.wait(30)
        self.proc = None
        return code
