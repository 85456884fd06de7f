"""Proxy overhead benchmark: direct to the echo backend vs through the proxy, publishing off and on, and
side by side with LiteLLM's proxy and TensorZero's gateway.

    infra/install_peers.sh                    # once: the peers, each in its own environment
    python -m bench.proxy                     # ~5 min on 2 cores
    python -m bench.proxy --peers none        # Sluice alone (~2 min)

One run starts a LocalBroker (Tansu), the echo backend (``infra.echo_backend``), five ``sluice proxy``
processes: publishing off, publishing on (records share produce requests: ``proxy.publish_linger_ms``,
5 ms), the same without waiting for the write-ahead log, publishing with ``proxy.publish_linger_ms: 0``
(each record leaves as soon as the producer sees it: what the linger buys), publishing with
``proxy.wal_fsync``; and the peers (``bench.peers``), all against the same backend. Each run is driven by a load generator in
its own process (``bench.loadgen``, aiohttp on loopback, 64 concurrent clients, non-streaming chat
completions, a new trajectory per call):

- latency at a fixed offered load (``--rate`` requests/s spread over the 64 clients): p50/p99 direct and
  through the proxy; the difference is the latency the proxy adds (targets: p50 <= 2 ms, p99 <= 5 ms).
  The fsync proxy's added latency is reported, not a target (it is the disk's);
- the write-ahead log's own cost: ``--wal-pairs`` back-to-back pairs at ``--rate`` of the publishing
  proxy whose responses wait for the log's group commit (as always in production) and an identical one
  that does not wait (``proxy.wal_before_response: false``, a benchmark-only switch), in alternating
  order so that the machine's noise hits both alike. ``wal_added_p99_ms`` = the median over the pairs of
  the p99 difference (target: <= 2 ms, ``met.added_p99_with_wal``);
- latency at ``--peer-rate`` (20 requests/s: LiteLLM queues at far less than ``--rate``) direct, through
  Sluice (publishing off and on) and through each peer: ``added_p50_vs_<peer>`` = Sluice's added p50
  with publishing / the peer's (target vs LiteLLM: <= 1/3);
- throughput with the 64 clients closed-loop (each sends its next request when the last one returns):
  requests/s direct, through the proxy with publishing on vs off (target: >= 90%) and through each peer
  (``throughput_vs_<peer>`` = Sluice with publishing / the peer; target vs LiteLLM: >= 2), and the CPU
  each request costs the target process (all threads and children; librdkafka's included) and the broker.
  For the publishing proxies, ``publish_lag_ms_mean``: the mean time from an event handed to the publisher
  to the broker's acknowledgement over the closed-loop runs (what the linger costs: never the agent's
  wait, which ends at the write-ahead log).

Rounds interleave the targets so that noise from other processes hits all of them alike; medians over the
rounds are reported. Everything shares the same cores (load generator, backend, proxy, broker), so
closed-loop latency is mostly queueing and closed-loop throughput is bounded by the machine, not the proxy.
The final line is one JSON object with the figures and the targets.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import yaml

from bench.loadgen import KEY, MODEL, run_load
from pipeline.proxy.publishing.commit_waits import wait_quantile_ms

ROOT = Path(__file__).resolve().parent.parent
PACED = ("direct", "nopub", "pub", "pub_fsync")
CLOSED = ("direct", "nopub", "pub", "pub_linger0")
PEER_PACED = ("direct", "nopub", "pub")  # at --peer-rate, with the peers
LAGGED = ("pub", "pub_linger0")  # closed-loop runs whose publish lag is reported
TARGETS = {
    "added_p50_ms_max": 2.0,
    "added_p99_ms_max": 5.0,
    "added_p99_ms_max_with_wal": 2.0,
    "publish_throughput_ratio_min": 0.9,
    "added_p50_vs_litellm_max": 1 / 3,
    "throughput_vs_litellm_min": 2.0,
    "added_p50_vs_tensorzero_max": 1.5,
    "throughput_vs_tensorzero_min": 1.0,
}


# ----------------------------------------------------------------------------- services


def wait_http(url: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(url)


def proxy_config(
    tmp: Path,
    port: int,
    echo_port: int,
    broker: str = "127.0.0.1:9",  # never dialled while publishing is off
    publish: bool = False,
    profile: str = "tansu",
    fsync: bool = False,
    wal_wait: bool = True,
    linger_ms: int = 5,
) -> Path:
    """The YAML of one benchmark proxy before the echo backend (one API key, tenant ``bench``)."""
    cfg = {
        "broker": {"bootstrap_servers": broker, "profile": profile, "embedded": False},
        "topics": {"prefix": "bench."},
        "up": {"local_model_backend": None},
        "proxy": {
            "port": port,
            "publish": publish,
            "wal_fsync": fsync,
            "wal_before_response": wal_wait,
            "publish_linger_ms": linger_ms,
            "spool_dir": str(tmp / f"spool-{port}-{uuid.uuid4().hex[:6]}"),
            "backends": [{"name": "echo", "base_url": f"http://127.0.0.1:{echo_port}/v1"}],
            "api_keys": [{"key": KEY, "tenant": "bench", "consent_training": True}],
        },
    }
    path = tmp / f"proxy-{port}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def start_proxy(
    tmp: Path,
    broker: str,
    echo_port: int,
    publish: bool,
    profile: str = "tansu",
    fsync: bool = False,
    wal_wait: bool = True,
    linger_ms: int = 5,
) -> tuple[subprocess.Popen[bytes], int]:
    from infra.broker import free_port

    port = free_port()
    path = proxy_config(tmp, port, echo_port, broker, publish, profile, fsync, wal_wait, linger_ms)
    log = open(tmp / f"proxy-{port}.log", "wb")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "--log-level", "WARNING", "proxy", "--config", str(path)],
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    wait_http(f"http://127.0.0.1:{port}/healthz")
    return proc, port


def health(port: int) -> dict[str, Any]:
    return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5).read())


def publish_lag(port: int) -> tuple[float, float]:
    """(sum of seconds, count) of the proxy's publish-lag histogram so far."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    found = {"sum": 0.0, "count": 0.0}
    for line in text.splitlines():
        for k in found:
            if line.startswith(f"sluice_proxy_publish_lag_seconds_{k} "):
                found[k] = float(line.split()[1])
    return found["sum"], found["count"]


def cpu_seconds(pid: int) -> float:
    """user + system CPU of a process, all its threads (Linux /proc)."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rotate(names: tuple[str, ...], r: int) -> tuple[str, ...]:
    """The round's order: rotated each round, so a noisy neighbour hits every target alike."""
    k = r % len(names)
    return names[k:] + names[:k]


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b is not None and b > 0 else None


def _round(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(x, digits)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=4.0, help="Seconds measured per run.")
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=3, help="Interleaved rounds; medians are reported.")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument(
        "--rate", type=float, default=300.0, help="Offered load of the latency runs (requests/s)."
    )
    ap.add_argument(
        "--peers",
        default="litellm,tensorzero",
        help="Peers run side by side (comma-separated, or 'none'); install them with infra/install_peers.sh.",
    )
    ap.add_argument(
        "--peer-rate", type=float, default=20.0, help="Offered load of the latency runs against the peers."
    )
    ap.add_argument(
        "--wal-pairs",
        type=int,
        default=8,
        help="Back-to-back pairs (with / without waiting for the write-ahead log) at --rate.",
    )
    ap.add_argument("--wal-duration", type=float, default=3.0, help="Seconds measured per run of a pair.")
    args = ap.parse_args()

    from bench import peers as peer_procs
    from infra.broker import LocalBroker, free_port
    from pipeline.topics import create_topics
    from sluice.broker_config import BrokerConfig
    from sluice.topics_config import TopicsConfig

    peer_names = [] if args.peers == "none" else [p.strip() for p in args.peers.split(",") if p.strip()]
    unknown = [p for p in peer_names if p not in peer_procs.ENVS]
    if unknown:
        ap.error(f"unknown peers {unknown}: choose from {sorted(peer_procs.ENVS)} or 'none'")
    absent = peer_procs.missing(peer_names)
    if absent:
        ap.error(f"peers {absent} are not installed: run infra/install_peers.sh (or pass --peers none)")

    tmp = Path(tempfile.mkdtemp(prefix="bench-proxy-"))
    procs: list[subprocess.Popen[bytes]] = []
    peers: dict[str, peer_procs.Peer] = {}
    broker = LocalBroker(log_path=tmp / "tansu.log").start()
    paced: dict[str, list[dict[str, Any]]] = {k: [] for k in PACED}
    peer_paced: dict[str, list[dict[str, Any]]] = {k: [] for k in (*PEER_PACED, *peer_names)}
    closed: dict[str, list[dict[str, Any]]] = {k: [] for k in (*CLOSED, *peer_names)}
    publisher: dict[str, Any] = {}
    wal_pairs: list[dict[str, dict[str, Any]]] = []
    waits: dict[str, list[int]] = {"pub": [], "pub_fsync": []}  # log-wait buckets during the paced runs
    try:
        create_topics(
            BrokerConfig(bootstrap_servers=broker.bootstrap_servers, embedded=False),
            TopicsConfig(prefix="bench."),
        )
        echo_port = free_port()
        procs.append(subprocess.Popen([sys.executable, "-m", "infra.echo_backend", "--port", str(echo_port)],
                                      cwd=ROOT, stdout=subprocess.DEVNULL))  # fmt: skip
        wait_http(f"http://127.0.0.1:{echo_port}/health")
        urls = {"direct": f"http://127.0.0.1:{echo_port}/v1/chat/completions"}
        models = dict.fromkeys(closed, MODEL)
        ports: dict[str, int] = {}
        pids = {"direct": procs[0].pid}
        for name, publish, fsync, wal_wait, linger_ms in (
            ("nopub", False, False, True, 5),
            ("pub", True, False, True, 5),
            ("pub_nowal", True, False, False, 5),
            ("pub_linger0", True, False, True, 0),
            ("pub_fsync", True, True, True, 5),
        ):
            proc, ports[name] = start_proxy(
                tmp, broker.bootstrap_servers, echo_port, publish, "tansu", fsync, wal_wait, linger_ms
            )
            procs.append(proc)
            urls[name], pids[name] = f"http://127.0.0.1:{ports[name]}/v1/chat/completions", proc.pid
        for name in peer_names:
            if name == "litellm":
                peer = peer_procs.start_litellm(tmp, echo_port, free_port())
            else:
                peer = peer_procs.start_tensorzero(tmp, echo_port)
            peers[name] = peer
            urls[name], pids[name], models[name] = peer.url, peer.proc.pid, peer.model
            run_load(
                peer.url, "closed", 8, 2.0, 0, 0.0, peer.model
            )  # its first calls are slow: before the rounds

        def closed_run(name: str) -> dict[str, Any]:
            watched = {"target": pids[name], "broker": broker._proc.pid}  # noqa: SLF001
            before = {k: peer_procs.tree_cpu_seconds(p) for k, p in watched.items()}
            lag_before = publish_lag(ports[name]) if name in LAGGED else None
            res = run_load(
                urls[name], "closed", args.concurrency, args.duration, 0, args.warmup, models[name]
            )
            sent = max(1, res["sent"])  # the CPU window covers every request, warmup and drain included
            res["cpu_us"] = {
                k: 1e6 * (peer_procs.tree_cpu_seconds(p) - before[k]) / sent for k, p in watched.items()
            }
            if lag_before is not None:
                time.sleep(0.2)  # the last deliveries of the run
                lag_after = publish_lag(ports[name])
                res["lag"] = (lag_after[0] - lag_before[0], lag_after[1] - lag_before[1])
            return res

        def paced_run(name: str, duration: float) -> dict[str, Any]:
            """A run at --rate; for a proxy that waits for the log, what the waits were inside it."""
            before = health(ports[name])["publisher"]["log_waits"] if name in waits else None
            res = run_load(urls[name], "paced", args.concurrency, duration, args.rate, args.warmup)
            if before is not None:
                after = health(ports[name])["publisher"]["log_waits"]
                diff = [a - b for a, b in zip(after, before, strict=True)]
                waits[name] = [a + d for a, d in zip(waits[name], diff, strict=True)] if waits[name] else diff
            return res

        for r in range(args.rounds):
            for name in _rotate(PACED, r):
                paced[name].append(paced_run(name, args.duration))
            for name in _rotate(tuple(peer_paced), r):
                peer_paced[name].append(
                    run_load(
                        urls[name],
                        "paced",
                        args.concurrency,
                        args.duration,
                        args.peer_rate,
                        args.warmup,
                        models[name],
                    )  # fmt: skip
                )
            for name in _rotate(tuple(closed), r):
                closed[name].append(closed_run(name))
            print(
                f"round {r + 1}: p99 ms "
                + json.dumps({k: round(v[-1]["p99_ms"], 2) for k, v in paced.items()})
                + " closed req/s "
                + json.dumps({k: round(v[-1]["rps"]) for k, v in closed.items()}),
                flush=True,
            )
        for i in range(args.wal_pairs):  # the log's own cost: the same proxy with and without the wait
            pair = {}
            for name in ("pub", "pub_nowal") if i % 2 == 0 else ("pub_nowal", "pub"):
                pair[name] = paced_run(name, args.wal_duration)
            wal_pairs.append(pair)
            print(
                f"pair {i + 1}: p99 ms with the log {pair['pub']['p99_ms']:.2f}, "
                f"without {pair['pub_nowal']['p99_ms']:.2f}",
                flush=True,
            )
        time.sleep(1.0)
        publisher = {
            k: health(ports[k])["publisher"] for k in ("pub", "pub_nowal", "pub_linger0", "pub_fsync")
        }
    finally:
        for peer in peers.values():
            peer.stop()
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait(30)
        broker.stop()

    def med(runs: list[dict[str, Any]], key: str) -> float | None:
        values = [run[key] for run in runs if run[key] is not None]
        return statistics.median(values) if values else None

    def cpu(name: str, who: str) -> float:
        return round(statistics.median(run["cpu_us"][who] for run in closed[name]), 1)

    def lag_ms(name: str) -> float | None:
        total, count = (sum(run["lag"][i] for run in closed[name]) for i in (0, 1))
        return round(1000 * total / count, 3) if count else None

    p50 = {k: med(v, "p50_ms") for k, v in paced.items()}
    p99 = {k: med(v, "p99_ms") for k, v in paced.items()}
    rps = {k: med(v, "rps") for k, v in closed.items()}
    added_p50, added_p99 = p50["pub"] - p50["direct"], p99["pub"] - p99["direct"]
    wal_p99 = [pr["pub"]["p99_ms"] - pr["pub_nowal"]["p99_ms"] for pr in wal_pairs]
    wal_p50 = [pr["pub"]["p50_ms"] - pr["pub_nowal"]["p50_ms"] for pr in wal_pairs]
    wal_added_p99 = statistics.median(wal_p99) if wal_p99 else None
    ratio = rps["pub"] / rps["nopub"]
    slow50 = {k: med(v, "p50_ms") for k, v in peer_paced.items()}
    slow99 = {k: med(v, "p99_ms") for k, v in peer_paced.items()}
    slow_added = {
        k: _round(None if v is None else v - slow50["direct"]) for k, v in slow50.items() if k != "direct"
    }
    vs = {}
    for name in ("litellm", "tensorzero"):
        if name in peers:
            vs[f"added_p50_vs_{name}"] = _ratio(slow_added["pub"], slow_added[name])
            vs[f"throughput_vs_{name}"] = _ratio(rps["pub"], rps[name])
    summary = {
        "bench": "proxy",
        "concurrency": args.concurrency,
        "rate_rps": args.rate,
        "rounds": args.rounds,
        "added_p50_ms": round(added_p50, 3),
        "added_p99_ms": round(added_p99, 3),
        "wal_added_p99_ms": _round(wal_added_p99),
        "wal_added_p50_ms": _round(statistics.median(wal_p50) if wal_p50 else None),
        "wal_wait_p50_ms": _round(wait_quantile_ms(waits["pub"], 0.5), 4),
        "wal_wait_p99_ms": _round(wait_quantile_ms(waits["pub"], 0.99), 4),
        "wal_wait_max_ms": _round(wait_quantile_ms(waits["pub"], 1.0), 4),
        "wal_wait_p99_ms_fsync": _round(wait_quantile_ms(waits["pub_fsync"], 0.99), 4),
        "wal_waits_counted": sum(waits["pub"]),
        "wal_pairs": len(wal_pairs),
        "wal_pair_p99_ms": [
            [round(pr["pub"]["p99_ms"], 2), round(pr["pub_nowal"]["p99_ms"], 2)] for pr in wal_pairs
        ],
        "wal_pair_p50_ms": [
            [round(pr["pub"]["p50_ms"], 2), round(pr["pub_nowal"]["p50_ms"], 2)] for pr in wal_pairs
        ],
        "added_p99_ms_fsync": round(p99["pub_fsync"] - p99["direct"], 3),
        "added_p50_ms_fsync": round(p50["pub_fsync"] - p50["direct"], 3),
        "added_p50_ms_nopublish": round(p50["nopub"] - p50["direct"], 3),
        "added_p99_ms_nopublish": round(p99["nopub"] - p99["direct"], 3),
        "p50_ms": {k: round(v, 3) for k, v in p50.items()},
        "p99_ms": {k: round(v, 3) for k, v in p99.items()},
        "closed_rps": {k: round(v, 1) for k, v in rps.items()},
        "closed_p50_ms": {k: _round(med(v, "p50_ms"), 2) for k, v in closed.items()},
        "closed_p99_ms": {k: _round(med(v, "p99_ms"), 2) for k, v in closed.items()},
        "publish_throughput_ratio": round(ratio, 3),
        "publish_throughput_ratio_linger0": round(rps["pub_linger0"] / rps["nopub"], 3),
        "publish_lag_ms_mean": {k: lag_ms(k) for k in LAGGED},
        "proxy_cpu_us_per_request": {k: cpu(k, "target") for k in ("nopub", "pub", "pub_linger0")},
        "broker_cpu_us_per_request": {k: cpu(k, "broker") for k in ("pub", "pub_linger0")},
        "events_delivered": {k: v["delivered"] for k, v in publisher.items()},
        "spool_depth_after": {k: v["spool_depth"] for k, v in publisher.items()},
        "peers": peer_names,
        "peer_rate_rps": args.peer_rate,
        "peer_rate_p50_ms": {k: _round(v) for k, v in slow50.items()},
        "peer_rate_p99_ms": {k: _round(v) for k, v in slow99.items()},
        "peer_rate_added_p50_ms": slow_added,
        "cpu_us_per_request": {k: cpu(k, "target") for k in closed},
        **vs,
        "errors": sum(
            run["errors"]
            for runs in (*paced.values(), *peer_paced.values(), *closed.values())
            for run in runs
        )
        + sum(run["errors"] for pr in wal_pairs for run in pr.values()),
        "errors_by_target": {
            k: sum(run["errors"] for run in (*paced.get(k, []), *peer_paced.get(k, []), *closed.get(k, [])))
            for k in {*paced, *peer_paced, *closed}
        },
        "targets": TARGETS,
        "met": {
            "added_p50": added_p50 <= TARGETS["added_p50_ms_max"],
            "added_p99": added_p99 <= TARGETS["added_p99_ms_max"],
            "added_p99_with_wal": wal_added_p99 is not None
            and wal_added_p99 <= TARGETS["added_p99_ms_max_with_wal"],
            "publish_throughput_ratio": ratio >= TARGETS["publish_throughput_ratio_min"],
        },
    }
    if "litellm" in peers:
        a, t = vs["added_p50_vs_litellm"], vs["throughput_vs_litellm"]
        summary["met"]["added_p50_vs_litellm"] = a is not None and a <= TARGETS["added_p50_vs_litellm_max"]
        summary["met"]["throughput_vs_litellm"] = t is not None and t >= TARGETS["throughput_vs_litellm_min"]
    if "tensorzero" in peers:
        a, t = vs["added_p50_vs_tensorzero"], vs["throughput_vs_tensorzero"]
        summary["met"]["added_p50_vs_tensorzero"] = (
            a is not None and a <= TARGETS["added_p50_vs_tensorzero_max"]
        )
        summary["met"]["throughput_vs_tensorzero"] = (
            t is not None and t >= TARGETS["throughput_vs_tensorzero_min"]
        )
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
