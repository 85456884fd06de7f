"""`sluice serve-model` as a real process for tests: the tiny model or SmolLM2, a config of its own."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from infra.broker import free_port, port_open

ROOT = Path(__file__).resolve().parents[3]


@dataclass
class ServeProcess:
    url: str  # the root, e.g. http://127.0.0.1:PORT (OpenAI base URL: url + "/v1")
    events_log: Path
    log: Path


@contextlib.contextmanager
def serve_model(tmp: Path, model: str = "sluice-tiny", extra: dict[str, Any] | None = None,
                sections: dict[str, Any] | None = None, port: int | None = None) -> Iterator[ServeProcess]:  # fmt: skip
    """Start serve-model with ``trainer.model = model``; ``extra`` goes into ``trainer.serve``."""
    tmp.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    serve = {"model_name": model, "events_log": str(tmp / "policy_events.jsonl"), **(extra or {})}
    data = {
        "trainer": {"model": model, "output_dir": str(tmp / "trainer"), "serve": serve},
        **(sections or {}),
    }
    cfg = tmp / "serve.yaml"
    cfg.write_text(yaml.safe_dump(data))
    log_path = tmp / "serve.log"
    cmd = [sys.executable, "-m", "app.cli", "serve-model", "--config", str(cfg), "--port", str(port)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT)}
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    try:
        deadline = time.monotonic() + 180  # the first SmolLM2 load converts the GGUF file (~30 s)
        while not port_open("127.0.0.1", port):
            assert proc.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, "serve-model did not listen within 180 s"
            time.sleep(0.1)
        yield ServeProcess(f"http://127.0.0.1:{port}", tmp / "policy_events.jsonl", log_path)
    finally:
        proc.terminate()
        code = proc.wait(timeout=30)
    assert code == 0, log_path.read_text()[-3000:]
