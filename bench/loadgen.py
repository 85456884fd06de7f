"""The load generator of ``bench.proxy``: aiohttp clients on loopback, in a process of their own (never the
measured one's), sending non-streaming chat completions; one JSON line of results.

    python -m bench.loadgen URL --mode paced|closed --concurrency 64 --duration 4 --rate 300 --warmup 1

``paced``: each client sends at ``concurrency / rate`` intervals (an offered load); ``closed``: each sends
its next request when the last one returned. Throughput counts the answers completed in the measured
window; latency counts every request sent in it, however long it took (so a slow target is not flattered
by dropping its slowest requests).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-bench-0000"
MODEL = "bench-model"


async def _load(
    url: str, mode: str, concurrency: int, duration: float, rate: float, warmup: float, model: str
) -> dict[str, Any]:
    import aiohttp

    headers = {"authorization": f"Bearer {KEY}", "content-type": "application/json"}
    lat: list[float] = []
    errors = 0
    counter = 0
    done = 0
    t_start = time.perf_counter()
    t_measure = t_start + warmup
    t_end = t_measure + duration
    interval = concurrency / rate if mode == "paced" else 0.0

    async def worker(w: int, session: aiohttp.ClientSession) -> None:
        nonlocal errors, counter, done
        next_at = t_start + (w / concurrency) * interval
        while True:
            now = time.perf_counter()
            if now >= t_end:
                return
            if interval:
                if next_at > now:
                    await asyncio.sleep(next_at - now)
                next_at += interval
            counter += 1
            body = {
                "model": model,
                "messages": [
                    {"role": "system", "content": "You are a benchmark agent. Answer briefly."},
                    {"role": "user", "content": f"request {w}-{counter}: what is the weather like today?"},
                ],
                "max_tokens": 64,
            }
            data = json.dumps(body).encode()
            t0 = time.perf_counter()
            try:
                async with session.post(url, data=data, headers=headers) as resp:
                    await resp.read()
                    ok = resp.status == 200
            except aiohttp.ClientError:
                ok = False
            t1 = time.perf_counter()
            if ok and t_measure <= t1 <= t_end:
                done += 1  # throughput: answers completed in the window
            if t_measure <= t0 < t_end:  # latency: every request sent in the window, however long it took
                if ok:
                    lat.append(t1 - t0)
                else:
                    errors += 1

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(worker(w, session) for w in range(concurrency)))
    lat.sort()
    n = len(lat)
    return {
        "requests": n,
        "sent": counter,
        "errors": errors,
        "rps": done / duration,
        "p50_ms": 1000 * statistics.median(lat) if n else None,
        "p99_ms": 1000 * lat[min(n - 1, int(0.99 * n))] if n else None,
    }


def run_load(
    url: str, mode: str, concurrency: int, duration: float, rate: float, warmup: float, model: str = MODEL
) -> dict[str, Any]:
    """The load generator in a separate process (never the proxy's)."""
    args = [sys.executable, "-m", "bench.loadgen", url, "--mode", mode, "--concurrency", str(concurrency),
            "--duration", str(duration), "--rate", str(rate), "--warmup", str(warmup), "--model", model]  # fmt: skip
    out = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("url")
    ap.add_argument("--mode", choices=("paced", "closed"), default="closed")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--duration", type=float, default=4.0)
    ap.add_argument("--rate", type=float, default=300.0)
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--model", default=MODEL)
    args = ap.parse_args()
    import uvloop

    result = uvloop.run(
        _load(args.url, args.mode, args.concurrency, args.duration, args.rate, args.warmup, args.model)
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
