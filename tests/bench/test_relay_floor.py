"""The floor relay of ``bench.relay_floor`` relays calls whole, in order, on kept-alive connections: the
figure it gives is the cost of a relay that works, not of one that drops or mixes answers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from bench.proxy import wait_http
from infra.broker import free_port

ROOT = Path(__file__).resolve().parents[2]


def test_the_relay_returns_what_the_backend_answers_on_one_kept_alive_connection() -> None:
    echo_port, relay_port = free_port(), free_port()
    procs = [
        subprocess.Popen([sys.executable, "-m", "infra.echo_backend", "--port", str(echo_port)], cwd=ROOT),
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench.relay_floor",
                "--serve",
                "--port",
                str(relay_port),
                "--backend-port",
                str(echo_port),
            ],
            cwd=ROOT,
        ),  # fmt: skip
    ]
    try:
        wait_http(f"http://127.0.0.1:{echo_port}/health")
        wait_http(f"http://127.0.0.1:{relay_port}/health")
        texts = [f"call {i}: {'x' * (i * 997)}" for i in range(6)]  # answers of growing size
        with httpx.Client(base_url=f"http://127.0.0.1:{relay_port}", timeout=10) as relayed:
            with httpx.Client(base_url=f"http://127.0.0.1:{echo_port}", timeout=10) as direct:
                for text in texts:
                    body = {"model": "m", "messages": [{"role": "user", "content": text}]}
                    got = relayed.post("/v1/chat/completions", json=body)
                    want = direct.post("/v1/chat/completions", json=body)
                    assert got.status_code == want.status_code == 200
                    assert got.json()["choices"] == want.json()["choices"]
            assert relayed.get("/health").status_code == 200
    finally:
        for p in procs:
            p.terminate()
            p.wait(10)
