"""A real OpenAI-compatible server for the model proposer: the echo backend as a process."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from infra.broker import free_port
from tests.pipeline.proxy.conftest import wait_port

ECHO_KEY = "sk-echo-backend"


@pytest.fixture(scope="session")
def echo_url() -> Iterator[str]:
    """The echo backend's base URL; it wants ECHO_KEY as the bearer token."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "infra.echo_backend", "--port", str(port), "--api-key", ECHO_KEY],
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_port(port)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(10)
