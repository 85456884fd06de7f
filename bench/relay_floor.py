"""What relaying an HTTP call costs Python at the least, beside TensorZero and the proxy, in one run.

The floor: ``relay`` below, uvloop with httptools' C parsers on both sides, one upstream keep-alive
connection per client connection, each request and answer relayed as the bytes received once the parser
says the message is complete. No framework, no JSON, nothing recorded. Beside it, on the same echo backend
and load generator (``bench.loadgen``, 64 clients, closed loop, non-streaming chat completions): the
bare forwarder the proxy's stack makes (uvicorn with httptools and uvloop, one POST upstream through the
proxy's own pooled client, ``pipeline.proxy.forwarding.http_client``: ``bench.server_variants --app forward
--client pool``), the proxy itself with publishing off (``--app proxy``), and
TensorZero when it is installed (``infra/install_peers.sh``). Rounds rotate the order; medians are
reported. CPU per request is the target process's user + system CPU over every request sent.

It says where the gap to the Rust gateway is: in what Python must do to relay at all, or in the layers
above it (the ASGI server and framework, the HTTP client, the proxy's own work per call).

    python -m bench.relay_floor                # ~2 min on 2 cores
    python -m bench.relay_floor --serve --port P --backend-port Q   # the relay alone
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.loadgen import MODEL
from bench.peers import missing, start_tensorzero
from bench.proxy import ROOT, proxy_config, wait_http
from bench.proxy_servers import closed_rounds, start_variant, stop_all


class _Upstream(asyncio.Protocol):
    """The backend side of one relayed connection: answers go back whole, as received."""

    def __init__(self, down: _Downstream) -> None:
        import httptools

        self.down, self.chunks = down, []
        self.parser = httptools.HttpResponseParser(self)
        self.transport: Any = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.chunks.append(data)
        self.parser.feed_data(data)

    def on_message_complete(self) -> None:
        self.down.transport.write(b"".join(self.chunks))
        self.chunks = []

    def connection_lost(self, exc: Exception | None) -> None:
        self.down.transport.close()


class _Downstream(asyncio.Protocol):
    """The client side of one relayed connection, with its own upstream connection."""

    def __init__(self, host: str, port: int) -> None:
        import httptools

        self.host, self.port = host, port
        self.chunks: list[bytes] = []
        self.waiting: list[bytes] = []  # requests complete before the upstream connection was up
        self.up: _Upstream | None = None
        self.parser = httptools.HttpRequestParser(self)
        self.transport: Any = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        asyncio.get_running_loop().create_task(self._connect())

    async def _connect(self) -> None:
        try:
            _, up = await asyncio.get_running_loop().create_connection(
                lambda: _Upstream(self), self.host, self.port
            )
        except OSError:  # no backend: the client sees its connection close, not a silent wait
            self.transport.close()
            return
        self.up = up
        for request in self.waiting:
            up.transport.write(request)
        self.waiting = []

    def data_received(self, data: bytes) -> None:
        self.chunks.append(data)
        self.parser.feed_data(data)

    def on_message_complete(self) -> None:
        request, self.chunks = b"".join(self.chunks), []
        if self.up is None:
            self.waiting.append(request)
        else:
            self.up.transport.write(request)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.up is not None and self.up.transport is not None:
            self.up.transport.close()


async def relay(port: int, backend_host: str, backend_port: int) -> None:
    """Serve the relay on ``port`` until cancelled."""
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: _Downstream(backend_host, backend_port), "127.0.0.1", port, backlog=1024
    )
    async with server:
        await server.serve_forever()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="Interleaved rounds; medians are reported.")
    ap.add_argument("--duration", type=float, default=4.0, help="Seconds measured per run.")
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--serve", action="store_true", help="Run the relay alone (--port, --backend-port).")
    ap.add_argument("--port", type=int)
    ap.add_argument("--backend-port", type=int)
    args = ap.parse_args()
    if args.serve:
        import uvloop

        uvloop.run(relay(args.port, "127.0.0.1", args.backend_port))
        return

    from infra.broker import free_port

    tmp = Path(tempfile.mkdtemp(prefix="bench-relay-floor-"))
    procs: list[subprocess.Popen[bytes]] = []
    targets: dict[str, tuple[str, int, str]] = {}  # name -> (url, pid, model)
    try:
        echo_port = free_port()
        echo_url = f"http://127.0.0.1:{echo_port}/v1/chat/completions"
        procs.append(subprocess.Popen([sys.executable, "-m", "infra.echo_backend", "--port", str(echo_port)],
                                      cwd=ROOT, stdout=subprocess.DEVNULL))  # fmt: skip
        wait_http(f"http://127.0.0.1:{echo_port}/health")
        targets["direct"] = (echo_url, procs[0].pid, MODEL)
        port = free_port()
        argv = ["--serve", "--port", str(port), "--backend-port", str(echo_port)]
        procs.append(subprocess.Popen([sys.executable, "-m", "bench.relay_floor", *argv], cwd=ROOT))
        wait_http(f"http://127.0.0.1:{port}/health")  # relayed to the echo backend's
        targets["relay"] = (f"http://127.0.0.1:{port}/v1/chat/completions", procs[-1].pid, MODEL)
        port = free_port()
        argv = ["--server", "uvicorn", "--app", "forward", "--client", "pool", "--backend", echo_url]
        procs.append(start_variant(tmp, argv, port, "forward"))
        targets["forwarder"] = (f"http://127.0.0.1:{port}/v1/chat/completions", procs[-1].pid, MODEL)
        port = free_port()
        config = proxy_config(tmp, port, echo_port)
        procs.append(start_variant(tmp, ["--server", "uvicorn", "--app", "proxy", "--config", str(config)],
                                   port, "proxy"))  # fmt: skip
        targets["proxy_nopub"] = (f"http://127.0.0.1:{port}/v1/chat/completions", procs[-1].pid, MODEL)
        if not missing(["tensorzero"]):
            peer = start_tensorzero(tmp, echo_port)
            procs.append(peer.proc)
            targets["tensorzero"] = (peer.url, peer.proc.pid, peer.model)
        runs = closed_rounds(targets, args)
    finally:
        stop_all(procs)
    med = {
        name: {k: statistics.median(run[k] for run in rs) for k in ("rps", "cpu_us")}
        for name, rs in runs.items()
    }
    result: dict[str, Any] = {"bench": "relay_floor", "rounds": args.rounds, "concurrency": args.concurrency}
    for name in runs:
        result[f"closed_rps_{name}"] = round(med[name]["rps"], 1)
        result[f"cpu_us_per_request_{name}"] = round(med[name]["cpu_us"], 1)
    if "tensorzero" in runs:
        tz = med["tensorzero"]["rps"]
        for name in ("relay", "forwarder", "proxy_nopub"):
            result[f"{name}_throughput_vs_tensorzero"] = round(med[name]["rps"] / tz, 3)
    result["errors"] = sum(run["errors"] for rs in runs.values() for run in rs)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
