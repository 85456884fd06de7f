"""Where the proxy's CPU per request goes: a py-spy profile of ``sluice proxy`` under the closed loop.

    python -m bench.proxy_profile                 # publishing off (~1 min)
    python -m bench.proxy_profile --publish       # publishing on, against a LocalBroker (Tansu)

The set-up of ``bench.proxy_cpu`` (the echo backend, one proxy, the load generator in its own process, a
new trajectory per call). While one measured round runs, ``py-spy record`` samples the proxy's Python
threads (idle ones are not sampled). Each sample is given to an owner by its innermost frame that belongs
to one, below the event loop's own frames: ``sluice`` (this repository's code, and what it calls: pydantic, json, hashing), ``server`` (the
ASGI server and its HTTP parser), ``client`` (the upstream HTTP client), ``broker_client`` (the Kafka
client's Python side); a sample in none of them (the event loop's own dispatch, selectors) is
``runtime``. Microseconds per request for an owner = its samples / the sampling rate / requests sent.
``native_us`` is what the process spent outside sampled Python (C threads such as librdkafka's, and
py-spy's misses): the measured CPU per request less the sampled total.

The final line is one JSON object: ``cpu_us_per_request``, ``us_per_request`` by owner, ``native_us`` and
the functions of Sluice with the most samples (innermost Sluice frame).
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import subprocess

from bench.loadgen import run_load
from bench.peers import tree_cpu_seconds
from bench.proxy_cpu import proxy_on_echo

SLUICE_PACKAGES = frozenset({"app", "governance", "pipeline", "sinks", "sluice", "trainers", "infra"})
OWNERS = {  # a frame's top-level package (py-spy names files relative to their sys.path entry) -> owner
    **dict.fromkeys(("uvicorn", "httptools", "uvloop", "granian", "h11", "starlette"), "server"),
    **dict.fromkeys(("aiohttp", "httpx", "httpcore", "yarl", "multidict", "aiohappyeyeballs"), "client"),
    "confluent_kafka": "broker_client",
}
CLIENT_FILES = frozenset(  # the proxy's own upstream client
    {"pipeline/proxy/forwarding/http_client.py", "pipeline/proxy/forwarding/upstream_response.py"}
)
LOOP_FILES = frozenset({"asyncio/events.py", "asyncio/base_events.py", "asyncio/runners.py"})
FRAME_FILE_START = " ("  # py-spy's raw frames: "function (path/to/file.py:line)"


def frame_file(frame: str) -> str:
    at = frame.rfind(FRAME_FILE_START)
    return frame[at + len(FRAME_FILE_START) : frame.rfind(":")] if at >= 0 else ""


def owner_of(stack: list[str]) -> tuple[str, str | None]:
    """(owner, the innermost Sluice frame) of one sampled stack, outermost frame first."""
    for frame in reversed(stack):
        path = frame_file(frame)
        if path in LOOP_FILES:  # the event loop running a callback: what is outside it is not the request's
            break
        package = path.lstrip("/").split("/", 1)[0]
        if path in CLIENT_FILES:
            return "client", None
        if package in SLUICE_PACKAGES:
            return "sluice", frame
        if package in OWNERS:
            return OWNERS[package], None
    return "runtime", None


def classify(raw: str) -> tuple[collections.Counter[str], collections.Counter[str]]:
    """Samples per owner and per innermost Sluice frame, from py-spy's raw (collapsed) output."""
    owners: collections.Counter[str] = collections.Counter()
    functions: collections.Counter[str] = collections.Counter()
    for line in raw.splitlines():
        stack_text, _, count = line.rpartition(" ")
        if not stack_text or not count.isdigit():
            continue
        owner, frame = owner_of(stack_text.split(";"))
        owners[owner] += int(count)
        if frame is not None:
            functions[frame[: frame.rfind(":")] + ")"] += int(count)  # by function, not line
    return owners, functions


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--publish", action="store_true", help="Publish step events (starts a LocalBroker).")
    ap.add_argument("--duration", type=float, default=8.0, help="Seconds profiled.")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--rate", type=int, default=250, help="py-spy samples per second.")
    ap.add_argument("--top", type=int, default=15, help="Sluice functions listed.")
    args = ap.parse_args()
    if shutil.which("py-spy") is None:
        raise SystemExit("py-spy is not installed: pip install py-spy")

    with proxy_on_echo(args.publish, "bench-proxy-profile-") as (proxy, url, tmp):
        run_load(url, "closed", args.concurrency, 2.0, 0, 0.0)  # first calls: imports, pools, caches
        out = tmp / "profile.txt"
        spy = subprocess.Popen(
            ["py-spy", "record", "--pid", str(proxy.pid), "--format", "raw", "--rate", str(args.rate),
             "--duration", str(int(args.duration)), "--nonblocking", "--output", str(out)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        before = tree_cpu_seconds(proxy.pid)
        res = run_load(url, "closed", args.concurrency, args.duration, 0, 0.0)
        cpu_us = 1e6 * (tree_cpu_seconds(proxy.pid) - before) / max(1, res["sent"])
        _, err = spy.communicate(timeout=60)
        if spy.returncode != 0 or not out.is_file():
            raise SystemExit(f"py-spy failed: {err.decode()[-2000:]}")
        if res["errors"]:
            raise SystemExit(f"{res['errors']} requests failed: the proxy log is in {tmp}")
        owners, functions = classify(out.read_text())
        per_sample_us = 1e6 / args.rate / max(1, res["sent"])
        by_owner = {k: round(owners.get(k, 0) * per_sample_us, 1)
                    for k in ("sluice", "server", "client", "broker_client", "runtime")}  # fmt: skip
        figures = {
            "bench": "proxy_profile",
            "publish": args.publish,
            "requests": res["sent"],
            "throughput_rps": round(res["rps"], 1),
            "cpu_us_per_request": round(cpu_us, 1),
            "us_per_request": by_owner,
            "native_us": round(cpu_us - sum(by_owner.values()), 1),
            "sluice_top_us": {f: round(n * per_sample_us, 1) for f, n in functions.most_common(args.top)},
        }
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
