"""`sluice train` as a command: a bad config fails before Ray starts; a short real run prints its summary.
(--resume is exercised through run_training in test_train_e2e.py.)"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from app.config import load_config
from infra.broker import LocalBroker
from pipeline.topics import create_topics
from testing.toy_traffic import make_trajectories, produce
from trainers.checkpoint import read_state
from trainers.config import TaskConfig
from trainers.ray_session import ray_temp_dir


def sluice(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SLUICE_LOG_LEVEL": "WARNING"}
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def test_bad_config_fails_before_ray(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"trainer": {"clip_low": 2.0, "task": {"reward": {"kind": "nope"}}}}))
    start = time.monotonic()
    out = sluice("train", "--config", str(bad))
    assert out.returncode == 2
    assert "trainer.clip_low" in out.stderr and "trainer.task.reward" in out.stderr
    assert "Ray" not in out.stderr and not (tmp_path / "var").exists()
    assert time.monotonic() - start < 60


def test_train_command_runs_and_stops_cleanly_on_sigterm(broker: LocalBroker, tmp_path: Path) -> None:
    task = {"kind": "reverse_digits", "max_digits": 1, "reward": {"kind": "exact_match"}}
    conf = {
        "broker": {"bootstrap_servers": broker.bootstrap_servers, "embedded": False},
        "topics": {"prefix": f"cli{time.time_ns()}.", "partitions": 2},
        "trainer": {
            "task": task,
            "tasks_per_step": 4,
            "group_size": 4,
            "max_new_tokens": 3,
            "progress": False,
        },
    }
    path = tmp_path / "sluice.yaml"
    path.write_text(yaml.safe_dump(conf))
    cfg = load_config(path)
    create_topics(cfg.broker, cfg.topics)
    produce(cfg, make_trajectories(400, TaskConfig(**task), logged_correct=1.0))

    env = {**os.environ, "SLUICE_LOG_LEVEL": "WARNING"}
    cmd = [sys.executable, "-m", "app.cli", "train", "--config", str(path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    metrics = tmp_path / "var" / "trainer" / "metrics.jsonl"
    deadline = time.monotonic() + 240
    while not (metrics.is_file() and len(metrics.read_text().splitlines()) >= 2):
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "no training steps within 240 s"
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-3000:]
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["stopped"] == "SIGTERM" and summary["step"] >= 2
    state = read_state(Path(summary["checkpoint"]))  # the final checkpoint is written on the way out
    assert state.step == summary["step"] and state.feeder_offsets
    ray_dir = ray_temp_dir(
        cfg.trainer_settings()
    )  # var/ray, or /tmp/sluice-ray-<hash> when var/ray is too long a path
    assert any(ray_dir.glob("session_*")), ray_dir
    shutil.rmtree(ray_dir, ignore_errors=True)
