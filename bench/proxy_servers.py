"""Which ASGI server and which upstream HTTP client the proxy should run on: closed-loop requests/s and
CPU per request of each, in one run, against the same echo backend.

    python -m bench.proxy_servers                 # ~2 min on 2 cores
    python -m bench.proxy_servers --rounds 5 --duration 4

Servers (``bench.server_variants``): the proxy app itself (``pipeline.proxy.app.create_app``, publishing
off, so the figures are the server's and the request path's, not the broker's) under ``uvicorn``
(httptools + uvloop), ``uvicorn-asyncio`` (httptools on the standard asyncio loop) and ``granian`` (Rust
HTTP/1, embedded in a uvloop loop). Clients: a bare forwarder (body in, one POST upstream, body out) under
uvicorn + uvloop with each pooled client: ``aiohttp``, ``httpx``, ``httpx2``. ``direct`` is the echo
backend alone, the ceiling on this machine.

Each target runs in its own process; the load generator (``bench.loadgen``, 64 clients, closed loop,
non-streaming chat completions) in another. CPU per request is the target process's user + system CPU
(all threads) over every request sent, warmup and drain included. Rounds rotate the order of the targets
so that noise from other processes hits all of them alike; medians over the rounds are reported. The
final line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.loadgen import MODEL, run_load
from bench.peers import tree_cpu_seconds
from bench.proxy import ROOT, _rotate, proxy_config, wait_http
from bench.server_variants import CLIENTS, SERVERS


def start_variant(tmp: Path, args: list[str], port: int, name: str) -> subprocess.Popen[bytes]:
    """One ``bench.server_variants`` process on ``port``, once it answers; its output goes to ``tmp``."""
    log = open(tmp / f"{name}.log", "wb")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen([sys.executable, "-m", "bench.server_variants", *args, "--port", str(port)],
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    wait_http(f"http://127.0.0.1:{port}/healthz")
    return proc


def closed_rounds(
    targets: dict[str, tuple[str, int, str]], args: argparse.Namespace
) -> dict[str, list[dict[str, Any]]]:
    """Closed-loop runs of each target (name -> url, pid, model) for ``args.rounds`` rounds, the order
    rotated each round; each run with the target process's CPU per request sent (``cpu_us``). Each target
    is called for a second first (imports, pools, caches)."""
    for url, _, model in targets.values():
        run_load(url, "closed", 8, 1.0, 0, 0.0, model)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in targets}
    for r in range(args.rounds):
        for name in _rotate(tuple(targets), r):
            url, pid, model = targets[name]
            before = tree_cpu_seconds(pid)
            res = run_load(url, "closed", args.concurrency, args.duration, 0, args.warmup, model)
            res["cpu_us"] = 1e6 * (tree_cpu_seconds(pid) - before) / max(1, res["sent"])
            runs[name].append(res)
        print(f"round {r + 1}: req/s " + json.dumps({k: round(v[-1]["rps"]) for k, v in runs.items()}),
              flush=True)  # fmt: skip
    return runs


def stop_all(procs: list[subprocess.Popen[bytes]]) -> None:
    """Terminate every process, then wait for each (they stop together, not one after another)."""
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="Interleaved rounds; medians are reported.")
    ap.add_argument("--duration", type=float, default=3.0, help="Seconds measured per run.")
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--concurrency", type=int, default=64)
    args = ap.parse_args()

    from infra.broker import free_port

    tmp = Path(tempfile.mkdtemp(prefix="bench-proxy-servers-"))
    procs: list[subprocess.Popen[bytes]] = []
    echo_port = free_port()
    echo_url = f"http://127.0.0.1:{echo_port}/v1/chat/completions"
    targets: dict[str, tuple[str, int]] = {}  # name -> (url, pid)
    runs: dict[str, list[dict[str, Any]]] = {}
    try:
        procs.append(subprocess.Popen([sys.executable, "-m", "infra.echo_backend", "--port", str(echo_port)],
                                      cwd=ROOT, stdout=subprocess.DEVNULL))  # fmt: skip
        wait_http(f"http://127.0.0.1:{echo_port}/health")
        targets["direct"] = (echo_url, procs[0].pid)
        for server in SERVERS:
            port = free_port()
            config = proxy_config(tmp, port, echo_port)
            proc = start_variant(
                tmp, ["--server", server, "--app", "proxy", "--config", str(config)], port, server
            )
            procs.append(proc)
            targets[f"server:{server}"] = (f"http://127.0.0.1:{port}/v1/chat/completions", proc.pid)
        for client in CLIENTS:
            port = free_port()
            argv = ["--server", "uvicorn", "--app", "forward", "--client", client, "--backend", echo_url]
            proc = start_variant(tmp, argv, port, f"forward-{client}")
            procs.append(proc)
            targets[f"client:{client}"] = (f"http://127.0.0.1:{port}/v1/chat/completions", proc.pid)
        runs = closed_rounds({n: (url, pid, MODEL) for n, (url, pid) in targets.items()}, args)
    finally:
        stop_all(procs)

    def med(name: str, key: str) -> float:
        return statistics.median(run[key] for run in runs[name])

    def figures(prefix: str) -> dict[str, dict[str, float]]:
        names = [n for n in runs if n.startswith(prefix)]
        return {
            "closed_rps": {n.removeprefix(prefix): round(med(n, "rps"), 1) for n in names},
            "cpu_us_per_request": {n.removeprefix(prefix): round(med(n, "cpu_us"), 1) for n in names},
            "closed_p50_ms": {n.removeprefix(prefix): round(med(n, "p50_ms"), 2) for n in names},
        }

    servers, clients = figures("server:"), figures("client:")
    base_s, base_c = servers["closed_rps"]["uvicorn"], clients["closed_rps"]["aiohttp"]
    summary = {
        "bench": "proxy_servers",
        "concurrency": args.concurrency,
        "rounds": args.rounds,
        "duration_s": args.duration,
        "direct_rps": round(med("direct", "rps"), 1),
        "servers": servers,
        "clients": clients,
        "server_rps_vs_uvicorn": {k: round(v / base_s, 3) for k, v in servers["closed_rps"].items()},
        "client_rps_vs_aiohttp": {k: round(v / base_c, 3) for k, v in clients["closed_rps"].items()},
        "errors": sum(run["errors"] for rs in runs.values() for run in rs),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
