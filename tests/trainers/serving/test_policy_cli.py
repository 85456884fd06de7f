"""`sluice train push / rollback` and `sluice status` against two real serve-model processes: one step moves
every server, a rollback one server cannot do changes none, status shows each server's version and the
learner's."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml
from safetensors.torch import save_file

from infra.broker import LocalBroker
from sluice.policy_client import PolicyClient
from trainers.serving.policy_events import read_events
from trainers.tiny_model import build_tiny

from .serve_process import serve_model

LAYER = "model.layers.0.mlp.up_proj.weight"


def sluice(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SLUICE_LOG_LEVEL": "WARNING"}
    cmd = [sys.executable, "-m", "app.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)


def test_push_rollback_and_status_across_servers(broker: LocalBroker, tmp_path: Path) -> None:
    with contextlib.ExitStack() as stack:
        a = stack.enter_context(serve_model(tmp_path / "a"))
        b = stack.enter_context(serve_model(tmp_path / "b"))
        out_dir = tmp_path / "trainer"
        out_dir.mkdir()
        (out_dir / "policy_state.json").write_text(json.dumps({"policy_version": 2, "step": 2}))
        cfg = tmp_path / "sluice.yaml"
        cfg.write_text(yaml.safe_dump({
            "broker": {"bootstrap_servers": broker.bootstrap_servers, "embedded": False},
            "trainer": {"output_dir": str(out_dir), "policy_servers": [a.url, b.url + "/v1"]},
        }))  # fmt: skip
        weights = tmp_path / "w.safetensors"
        save_file({LAYER: build_tiny()[0].state_dict()[LAYER] * 2}, str(weights))

        pushed = sluice("train", "push", str(weights), "1", "--config", str(cfg))
        assert pushed.returncode == 0, pushed.stderr
        assert pushed.stdout.count("serving 1") == 2
        PolicyClient(a.url).push_file(weights, "2")  # only a has "2"

        refused = sluice("train", "rollback", "2", "--config", str(cfg))
        assert refused.returncode == 1 and "no server changed" in refused.stderr and b.url in refused.stderr
        assert [PolicyClient(s.url).status().serving_version for s in (a, b)] == ["2", "1"]

        rolled = sluice("train", "rollback", "0", "--config", str(cfg))
        assert rolled.returncode == 0, rolled.stderr
        assert [PolicyClient(s.url).status().serving_version for s in (a, b)] == ["0", "0"]
        assert [e.action for e in read_events(b.events_log)] == ["load", "update", "rollback"]

        reused = sluice("train", "push", str(weights), "1", "--config", str(cfg))
        assert reused.returncode == 1 and "used before" in reused.stderr

        status = sluice("status", "--json", "--interval", "0", "--config", str(cfg))
        assert status.returncode == 1, status.stderr  # no proxy or sink runs here: status says so
        assert json.loads(status.stdout)["healthy"] is False
        policy = json.loads(status.stdout)["policy"]
        assert policy["learner_version"] == "2"
        assert [(s["url"], s["serving_version"]) for s in policy["servers"]] == [(a.url, "0"), (b.url, "0")]
        text = sluice("status", "--interval", "0", "--config", str(cfg)).stdout
        assert "policy servers (learner at 2)" in text
        row = next(line for line in text.splitlines() if line.strip().startswith(a.url))
        assert row.split() == [a.url, "0", "1,2,0", "2"], text
    down = sluice("status", "--json", "--interval", "0", "--config", str(cfg))
    assert [s["error"] for s in json.loads(down.stdout)["policy"]["servers"]] == ["down", "down"]
