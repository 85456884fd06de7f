"""CPU the proxy process spends per request: non-streaming chat completions through one ``sluice proxy``.

    python -m bench.proxy_cpu                         # publishing off: the request path alone (~1 min)
    python -m bench.proxy_cpu --publish               # publishing on, against a LocalBroker (Tansu)

A focused cut of ``bench.proxy``'s closed-loop run: the echo backend (``infra.echo_backend``) and one
proxy, driven by the load generator in its own process (``bench.loadgen``, closed loop, a new trajectory
per call). Each round measures the proxy's user + system CPU (all threads and children) over every request
sent, warmup and drain included, divided by their number; the median over ``--rounds`` is reported. The
load generator and the backend share the cores, so compare runs made the same way on the same machine.
The final line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.loadgen import run_load
from bench.peers import tree_cpu_seconds
from bench.proxy import ROOT, start_proxy, wait_http


@contextmanager
def proxy_on_echo(publish: bool, prefix: str) -> Iterator[tuple[subprocess.Popen[bytes], str, Path]]:
    """One ``sluice proxy`` before the echo backend (and a LocalBroker when ``publish``): the proxy's
    process, its chat completions URL and the run's folder (logs); everything is stopped on exit."""
    from infra.broker import LocalBroker, free_port

    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    procs: list[subprocess.Popen[bytes]] = []
    broker = None
    try:
        bootstrap = "127.0.0.1:9"  # never dialled while publishing is off
        if publish:
            from pipeline.topics import create_topics
            from sluice.broker_config import BrokerConfig
            from sluice.topics_config import TopicsConfig

            broker = LocalBroker(log_path=tmp / "tansu.log").start()
            bootstrap = broker.bootstrap_servers
            create_topics(
                BrokerConfig(bootstrap_servers=bootstrap, embedded=False), TopicsConfig(prefix="bench.")
            )
        echo_port = free_port()
        procs.append(subprocess.Popen([sys.executable, "-m", "infra.echo_backend", "--port", str(echo_port)],
                                      cwd=ROOT, stdout=subprocess.DEVNULL))  # fmt: skip
        wait_http(f"http://127.0.0.1:{echo_port}/health")
        proxy, port = start_proxy(tmp, bootstrap, echo_port, publish)
        procs.append(proxy)
        yield proxy, f"http://127.0.0.1:{port}/v1/chat/completions", tmp
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=10)
        if broker is not None:
            broker.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--publish", action="store_true", help="Publish step events (starts a LocalBroker).")
    ap.add_argument("--rounds", type=int, default=5, help="Measured rounds; the median is reported.")
    ap.add_argument("--duration", type=float, default=4.0, help="Seconds measured per round.")
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--concurrency", type=int, default=16)
    args = ap.parse_args()

    with proxy_on_echo(args.publish, "bench-proxy-cpu-") as (proxy, url, tmp):
        run_load(url, "closed", args.concurrency, 1.0, 0, 0.0)  # first calls: imports, pools, caches
        per_request: list[float] = []
        throughput: list[float] = []
        for _ in range(args.rounds):
            before = tree_cpu_seconds(proxy.pid)
            res = run_load(url, "closed", args.concurrency, args.duration, 0, args.warmup)
            per_request.append(1e6 * (tree_cpu_seconds(proxy.pid) - before) / max(1, res["sent"]))
            throughput.append(res["rps"])
            if res["errors"]:
                raise SystemExit(f"{res['errors']} requests failed: the proxy log is in {tmp}")
        print(
            json.dumps(
                {
                    "publish": args.publish,
                    "rounds": args.rounds,
                    "proxy_cpu_us_per_request": round(statistics.median(per_request), 1),
                    "proxy_cpu_us_per_request_rounds": [round(x, 1) for x in per_request],
                    "throughput_rps": round(statistics.median(throughput), 1),
                }
            )
        )


if __name__ == "__main__":
    main()
