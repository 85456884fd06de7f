"""Weight swaps into `sluice serve-model` with the real instruct model (SmolLM2-135M-Instruct, fp32, 538 MB).

Measures, in one run against one serve-model process:

- ``partial``: one decoder layer (its 9 tensors, 3.5M parameters) pushed as a safetensors file the server
  reads (``file``) and as the request body (``bytes``);
- ``full``: every tensor (134.5M parameters), file and bytes;
- ``rollback``: back to a kept version;
- for each: the client's wall time for the push, ``swap_ms`` (how long generation paused: the parameter
  pointers swapped between batches) and ``load_ms`` (reading and checking the tensors while serving went on);
- while the pushes run, a client keeps sending chat requests: ``requests_during_swaps`` and how many failed;
- the baseline a swap replaces: restarting serve-model with the new weights (process start to listening),
  during which every request fails. Ratios are restart time / push time.

Ends with one JSON line (medians over ``--repeats``).

    python -m bench.policy_swap              # ~3 min
    python -m bench.policy_swap --repeats 1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import yaml
from safetensors import safe_open
from safetensors.torch import save_file

from infra.broker import free_port, port_open
from sluice.policy_client import PolicyClient
from trainers.smollm2 import SMOLLM2_NAME, smollm2_dir

LAYER = "model.layers.7."


def start_server(tmp: Path) -> tuple[subprocess.Popen[bytes], str, float]:
    port = free_port()
    cfg = tmp / "serve.yaml"
    serve = {"model_name": SMOLLM2_NAME, "keep_versions": 2, "events_log": str(tmp / "events.jsonl")}
    cfg.write_text(
        yaml.safe_dump({"trainer": {"model": SMOLLM2_NAME, "output_dir": str(tmp), "serve": serve}})
    )
    cmd = [sys.executable, "-m", "app.cli", "serve-model", "--config", str(cfg), "--port", str(port)]
    t0 = time.perf_counter()
    log = (tmp / "serve.log").open("ab")
    proc = subprocess.Popen(
        cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    while not port_open("127.0.0.1", port):
        if proc.poll() is not None:
            raise RuntimeError((tmp / "serve.log").read_text()[-2000:])
        time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port}", time.perf_counter() - t0


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    proc.wait(60)


class Traffic(threading.Thread):
    """Chat requests one after another until stopped; counts answers and failures."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.ok, self.failed, self.versions = url, 0, 0, set()
        self.halt = threading.Event()

    def run(self) -> None:
        body = {"model": SMOLLM2_NAME, "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 8}
        with httpx.Client(base_url=self.url, timeout=120) as c:
            while not self.halt.is_set():
                try:
                    r = c.post("/v1/chat/completions", json=body)
                    if r.status_code == 200:
                        self.ok += 1
                        self.versions.add(r.headers["x-sluice-policy-version"])
                    else:
                        self.failed += 1
                except httpx.HTTPError:
                    self.failed += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    weights = next(smollm2_dir().glob("*.safetensors"))
    with safe_open(str(weights), "pt") as f:
        full = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 - safe_open has no iterator
    layer = {k: v for k, v in full.items() if k.startswith(LAYER)}
    with tempfile.TemporaryDirectory(prefix="sluice-swap-") as tmp_s:
        tmp = Path(tmp_s)
        layer_file = tmp / "layer.safetensors"
        save_file(layer, str(layer_file))
        proc, url, cold_s = start_server(tmp)
        restarts = []
        try:
            client = PolicyClient(url)
            traffic = Traffic(url)
            traffic.start()
            time.sleep(1.0)
            runs: dict[str, list[dict[str, float]]] = {k: [] for k in
                                                       ("partial_file", "partial_bytes", "full_file", "full_bytes", "rollback")}  # fmt: skip
            n = 0
            for _ in range(args.repeats):
                for kind, push in (
                    ("partial_file", lambda v: client.push_file(layer_file, v)),
                    ("partial_bytes", lambda v: client.push_state_dict(layer, v)),
                    ("full_file", lambda v: client.push_file(weights, v)),
                    ("full_bytes", lambda v: client.push_state_dict(full, v)),
                ):
                    n += 1
                    t0 = time.perf_counter()
                    reply = push(f"b{n}")
                    runs[kind].append({"push_s": time.perf_counter() - t0, "swap_ms": reply.swap_ms,
                                       "load_ms": reply.load_ms, "wait_ms": reply.wait_ms})  # fmt: skip
                back = client.status().versions[0]
                t0 = time.perf_counter()
                reply = client.rollback(back)
                runs["rollback"].append({"push_s": time.perf_counter() - t0, "swap_ms": reply.swap_ms,
                                         "load_ms": 0.0, "wait_ms": reply.wait_ms})  # fmt: skip
            traffic.halt.set()
            traffic.join(120)
        finally:
            stop(proc)
        for _ in range(args.repeats):  # the baseline: a restart with the weights on disk
            proc, _, restart_s = start_server(tmp)
            restarts.append(restart_s)
            stop(proc)

    def med(kind: str, key: str) -> float:
        return round(statistics.median(r[key] for r in runs[kind]), 3)

    restart_s = statistics.median(restarts)
    result: dict[str, object] = {"bench": "policy_swap", "model": SMOLLM2_NAME, "repeats": args.repeats,
                                 "layer_tensors": len(layer), "full_tensors": len(full)}  # fmt: skip
    for kind in runs:
        for key in ("push_s", "swap_ms", "load_ms", "wait_ms"):
            result[f"{kind}_{key}"] = med(kind, key)
    result |= {
        "restart_s": round(restart_s, 3),
        "first_start_s": round(cold_s, 3),
        "restart_vs_full_file_push": round(restart_s / med("full_file", "push_s"), 2),
        "restart_vs_partial_file_push": round(restart_s / med("partial_file", "push_s"), 2),
        "requests_during_swaps": traffic.ok + traffic.failed,
        "failed_during_swaps": traffic.failed,
        "versions_seen_by_traffic": len(traffic.versions),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
