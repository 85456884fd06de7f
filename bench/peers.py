"""The peers ``bench.proxy`` runs side by side with Sluice, against the same echo backend and load.

- **LiteLLM's proxy** (Python): ``litellm --config cfg.yaml --num_workers 1`` from ``var/peers/litellm``, one
  model entry ``openai/bench-model`` pointing at the echo backend, telemetry and the remote cost-map fetch
  off. It runs without a master key (``LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY``), its fastest
  configuration: with a master key and no database each call costs it noticeably more.
- **TensorZero's gateway** (Rust, embedded in its PyPI wheel): ``bench/tensorzero_gateway.py`` run by
  ``var/peers/tensorzero``'s Python, one ``[models.bench-model]`` entry with an ``openai`` provider; with
  observability off it stores nothing, a pure-gateway baseline. Model name
  ``tensorzero::model_name::bench-model``.

Both environments come from ``infra/install_peers.sh``, so the peers' pins never touch Sluice's. Each peer
is its own process group, stopped by its group id.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
ENVS = {"litellm": ROOT / "var/peers/litellm", "tensorzero": ROOT / "var/peers/tensorzero"}
MODEL = "bench-model"


@dataclass
class Peer:
    name: str
    proc: subprocess.Popen[bytes]
    url: str  # chat completions
    model: str  # the model name the load generator sends

    def stop(self) -> None:
        if self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


def missing(names: list[str]) -> list[str]:
    """Peers whose environment is not installed."""
    exe = {"litellm": "bin/litellm", "tensorzero": "bin/python"}
    return [n for n in names if not (ENVS[n] / exe[n]).exists()]


def _wait(proc: subprocess.Popen[bytes], log: Path, ready: str, timeout_s: float = 120.0) -> str:
    """The log line that starts with ``ready`` (the peer is serving), or an error with the log's tail."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for line in log.read_text(errors="replace").splitlines():
            if ready in line:
                return line
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    raise RuntimeError(f"peer did not start ({log}):\n" + log.read_text(errors="replace")[-3000:])


def _popen(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(
            args, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )


def start_litellm(tmp: Path, echo_port: int, port: int) -> Peer:
    cfg = {
        "model_list": [
            {
                "model_name": MODEL,
                "litellm_params": {
                    "model": f"openai/{MODEL}",
                    "api_base": f"http://127.0.0.1:{echo_port}/v1",
                    "api_key": "sk-echo-unused",
                },
            }
        ],
    }
    path = tmp / "litellm.yaml"
    path.write_text(yaml.safe_dump(cfg))
    log = tmp / "litellm.log"
    env = {
        **os.environ,
        "LITELLM_TELEMETRY": "False",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY": "true",
    }
    exe = str(ENVS["litellm"] / "bin/litellm")
    proc = _popen([exe, "--config", str(path), "--host", "127.0.0.1", "--port", str(port), "--num_workers", "1"],
                  log, env)  # fmt: skip
    _wait(proc, log, "Uvicorn running on")
    return Peer("litellm", proc, f"http://127.0.0.1:{port}/v1/chat/completions", MODEL)


def start_tensorzero(tmp: Path, echo_port: int) -> Peer:
    path = tmp / "tensorzero.toml"
    path.write_text(
        "[gateway]\nobservability.enabled = false\n\n"
        f'[models.{MODEL}]\nrouting = ["echo"]\n\n'
        f'[models.{MODEL}.providers.echo]\ntype = "openai"\nmodel_name = "{MODEL}"\n'
        f'api_base = "http://127.0.0.1:{echo_port}/v1"\n'
    )
    log = tmp / "tensorzero.log"
    env = {**os.environ, "OPENAI_API_KEY": "sk-echo-unused", "RUST_LOG": "warn"}
    exe = str(ENVS["tensorzero"] / "bin/python")
    proc = _popen([exe, str(ROOT / "bench/tensorzero_gateway.py"), str(path)], log, env)
    base = _wait(proc, log, "gateway ready on").split("gateway ready on", 1)[1].strip()
    return Peer("tensorzero", proc, f"{base}/chat/completions", f"tensorzero::model_name::{MODEL}")


def tree_cpu_seconds(pid: int) -> float:
    """user + system CPU of a process and its descendants, all threads (Linux /proc)."""
    total, stack = 0.0, [pid]
    tick = os.sysconf("SC_CLK_TCK")
    while stack:
        p = stack.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
            for task in Path(f"/proc/{p}/task").iterdir():
                stack += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return total
