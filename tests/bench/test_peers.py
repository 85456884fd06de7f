"""The peers ``bench.proxy`` compares against start from their own environments and answer through the
benchmark's load generator (LiteLLM's proxy, TensorZero's Rust gateway, the real echo backend)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench import peers
from bench.loadgen import run_load
from bench.proxy import wait_http
from infra.broker import free_port

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(
    bool(peers.missing(list(peers.ENVS))), reason="peers not installed: run infra/install_peers.sh"
)


@pytest.fixture(scope="module")
def echo_port() -> Iterator[int]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "infra.echo_backend", "--port", str(port)], cwd=ROOT, stdout=subprocess.DEVNULL
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/health")
        yield port
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize("name", ["tensorzero", "litellm"])
def test_peer_serves_the_benchmark_load_and_stops(name: str, echo_port: int, tmp_path: Path) -> None:
    if name == "litellm":
        peer = peers.start_litellm(tmp_path, echo_port, free_port())
    else:
        peer = peers.start_tensorzero(tmp_path, echo_port)
    try:
        body = {"model": peer.model, "messages": [{"role": "user", "content": "hi peer"}], "max_tokens": 64}
        req = urllib.request.Request(
            peer.url,
            json.dumps(body).encode(),
            {"content-type": "application/json", "authorization": "Bearer x"},
        )
        answer = json.loads(urllib.request.urlopen(req, timeout=30).read())
        assert (
            answer["choices"][0]["message"]["content"] == "Echo: hi peer"
        )  # the echo backend, through the peer
        res = run_load(peer.url, "closed", 4, 1.0, 0, 0.3, peer.model)
        assert res["errors"] == 0 and res["requests"] > 0 and res["p50_ms"] > 0
        assert peers.tree_cpu_seconds(peer.proc.pid) > 0
    finally:
        peer.stop()
    assert peer.proc.poll() is not None
