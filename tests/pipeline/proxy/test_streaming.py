"""Streaming is pass-through: the first chunk reaches the agent while the backend is still generating,
before the step has been assembled and recorded."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from infra.broker import LocalBroker, free_port
from pipeline.topics import create_topics
from tests.conftest import make_config
from tests.pipeline.proxy.conftest import BACKEND_KEY, KEY, ROOT, proxy_section, serve, wait_port


@pytest.fixture
def slow_echo() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "infra.echo_backend",
            "--port",
            str(port),
            "--api-key",
            BACKEND_KEY,
            "--chunk-delay-ms",
            "150",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_port(port)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(10)


def test_chunks_are_relayed_before_the_stream_ends(
    broker: LocalBroker, tmp_path: Path, slow_echo: str
) -> None:
    cfg = make_config(
        broker, tmp_path, proxy=proxy_section(slow_echo, tmp_path), up={"local_model_backend": None}
    )
    create_topics(cfg.broker, cfg.topics)
    with serve(cfg) as live:
        state = live.app.state.sluice
        client = openai.OpenAI(base_url=live.url + "/v1", api_key=KEY, max_retries=0)
        stream = client.chat.completions.create(
            model="tok-x",
            messages=[{"role": "user", "content": "a fairly long question to answer"}],
            stream=True,
        )
        seen_before_record = None
        pieces = []
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                if seen_before_record is None:
                    # the backend still has ~4 pieces to go (150 ms apart): nothing may be recorded yet
                    seen_before_record = not state.metrics.registry.get_sample_value(
                        "sluice_proxy_events_total", {"kind": "step"}
                    )
                pieces.append(chunk.choices[0].delta.content)
        assert seen_before_record is True
        assert "".join(pieces) == "Echo: a fairly long question to answer" and len(pieces) > 3
        events = live.events(1)
        assert (
            events[0].metadata.stream
            and events[0].metadata.time_to_first_token_ms < events[0].metadata.latency_ms
        )
        assert events[0].action.choices[0].token_ids  # assembled from the chunks after the stream ended
