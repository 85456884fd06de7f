"""Fixtures of the control plane's tests: the echo backend as a process (for the model proposer), and one
recorded tenant in a real DuckDB (written by a real sink from the real broker) with a real scripted
OpenAI-compatible backend (for the gates and the loop)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from app.config import SluiceConfig, load_config
from infra.broker import LocalBroker, free_port
from pipeline.demo.summary import id_list, scalar
from sinks.clients import connect_client
from sluice.events import Trajectory
from tests.pipeline.evolve.scripted_backend import ScriptedBackend
from tests.pipeline.evolve.world import MODEL, TASK, recorded_traffic
from tests.pipeline.proxy.conftest import wait_port
from tests.sinks.helpers import SinkProcess, produce_trajectories, write_config

ECHO_KEY = "sk-echo-backend"


@pytest.fixture(scope="session")
def echo_url() -> Iterator[str]:
    """The echo backend's base URL; it wants ECHO_KEY as the bearer token."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "infra.echo_backend", "--port", str(port), "--api-key", ECHO_KEY],
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_port(port)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(10)


@dataclass
class World:
    cfg: SluiceConfig
    path: Path
    sink: SinkProcess
    backend: ScriptedBackend
    cluster: list[str]
    unreplayable: list[str]

    def ingest(self, trajectories: list[Trajectory], timeout_s: float = 60) -> None:
        """Produce to the audited topic and wait until the sink stored every one."""
        produce_trajectories(self.cfg, trajectories)
        ids = [t.trajectory_id for t in trajectories]
        client = connect_client(self.cfg.sink_settings(), None)
        try:
            deadline = time.monotonic() + timeout_s
            sql = f"SELECT count(*) FROM trajectories WHERE trajectory_id IN ({id_list(ids)})"
            while scalar(client, sql) != len(ids):
                dead = scalar(client, "SELECT count(*) FROM dead_letters")
                if dead or time.monotonic() > deadline:
                    raise AssertionError(
                        f"sink did not store {len(ids)} trajectories:\n{self.sink.output()[-3000:]}"
                    )
                time.sleep(0.2)
        finally:
            client.close()


def evolve_section(backend_url: str) -> dict:
    return {
        "graders": {TASK: {"reward": {"kind": "exact_match"}}},
        "limits": {"min_evidence": 4, "max_canaries": 1, "cooldown_after_rollback_s": 3600},
        "shadow": {"max_prompts": 12, "min_prompts": 4, "margin": 0.2},
        "offline": {"held_out": 4, "margin": 0.1},
        "canary": {"share": 0.5, "test": {"alpha": 0.05, "tune_n": 20, "min_per_arm": 10}},
        "ack_timeout_s": 15,
    }


@pytest.fixture(scope="module")
def world(broker: LocalBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("evolve")
    with ScriptedBackend() as backend:
        path, _ = write_config(broker, tmp)
        data = yaml.safe_load(path.read_text())
        data["proxy"]["backends"] = [{"name": "scripted", "base_url": backend.base_url, "models": [MODEL]}]
        data["evolve"] = evolve_section(backend.base_url)
        data["up"] = {"local_model_backend": None}
        path.write_text(yaml.safe_dump(data))
        cfg = load_config(path)
        sink = SinkProcess(path, cfg).wait_ready()
        try:
            trajs, cluster, unreplayable = recorded_traffic()
            w = World(cfg, path, sink, backend, cluster, unreplayable)
            w.ingest(trajs)
            yield w
        finally:
            assert sink.stop() == 0, sink.output()[-3000:]
