"""Arize Phoenix as a real OTLP receiver for tests: ``phoenix serve`` from its own environment
(``var/phoenix``, made by ``infra/install.sh``), on loopback ports, with a throwaway working directory.
Spans are read back through Phoenix's REST API, as a user of Phoenix would see them."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from infra.broker import free_port

PHOENIX_BIN = Path(__file__).resolve().parents[1] / "var" / "phoenix" / "bin" / "phoenix"


class PhoenixServer:
    """``PhoenixServer(workdir).start()``; ``endpoint`` is its OTLP/HTTP traces URL."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.endpoint = self.url + "/v1/traces"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = workdir / "phoenix.log"

    def start(self) -> PhoenixServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "PHOENIX_WORKING_DIR": str(self.workdir),
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(self.port),
            "PHOENIX_GRPC_PORT": str(free_port()),
            "PHOENIX_TELEMETRY_ENABLED": "false",
        }
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [str(PHOENIX_BIN), "serve"], stdout=out, stderr=subprocess.STDOUT, env=env
            )
        return self

    def wait_ready(self, timeout_s: float = 240.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.proc is not None and self.proc.poll() is None, self.log.read_text()[-3000:]
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=2) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise TimeoutError(f"Phoenix not ready in {timeout_s} s: {self.log.read_text()[-3000:]}")

    def spans(self, project: str = "default") -> list[dict[str, Any]]:
        """Every span Phoenix stored for a project (its REST API, page by page)."""
        out: list[dict[str, Any]] = []
        cursor = ""
        while True:
            query = "limit=1000" + (f"&cursor={cursor}" if cursor else "")
            with urllib.request.urlopen(f"{self.url}/v1/projects/{project}/spans?{query}", timeout=10) as r:
                page = json.load(r)
            out += page["data"]
            cursor = page.get("next_cursor") or ""
            if not cursor:
                return out

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
