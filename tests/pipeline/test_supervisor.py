"""The supervisor runs real child processes: prefixed logs, readiness, death detection, ordered stop."""

from __future__ import annotations

import io
import re
import sys
import time
from pathlib import Path

import pytest

from pipeline.supervisor import ServiceSpec, Supervisor, SupervisorError

CHILD = (
    "import signal, sys, time\n"
    "name = sys.argv[1]\n"
    "def bye(*_):\n"
    "    print(name + ' stopping', flush=True); sys.exit(0)\n"
    "signal.signal(signal.SIGTERM, bye)\n"
    "time.sleep(0.2); print(name + ' ready', flush=True)\n"
    "while True: time.sleep(0.05)\n"
)


def _spec(name: str, *, script: str = CHILD) -> ServiceSpec:
    return ServiceSpec(name, [sys.executable, "-c", script, name], ready_timeout_s=20, stop_grace_s=5)


def test_start_ready_and_stop_in_reverse_order(tmp_path: Path) -> None:
    out = io.StringIO()
    sup = Supervisor(log_path=tmp_path / "up.log", sink=out)
    sup.start(_spec("alpha"))
    sup.start(_spec("beta"))
    assert sup.names() == ["alpha", "beta"] and sup.dead() == []
    sup.stop_all()
    text = out.getvalue()
    assert re.search(r"alpha \| alpha ready", text) and re.search(r"beta \| beta ready", text)
    assert text.index("beta stopping") < text.index("alpha stopping")
    assert "alpha ready" in (tmp_path / "up.log").read_text()


def test_child_that_dies_while_starting_is_reported(tmp_path: Path) -> None:
    sup = Supervisor(sink=io.StringIO())
    with pytest.raises(SupervisorError, match="exited with code 3"):
        sup.start(_spec("broken", script="import sys; print('boom'); sys.exit(3)"))
    sup.stop_all()


def test_death_after_start_is_detected() -> None:
    sup = Supervisor(sink=io.StringIO())
    sup.start(_spec("short", script="import time; print('ready', flush=True); time.sleep(0.3)"))
    deadline = time.monotonic() + 10
    while not sup.dead() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sup.dead() == ["short"]
    sup.stop_all()


def test_child_ignoring_sigterm_is_killed() -> None:
    stubborn = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('ready', flush=True)\ntime.sleep(60)\n"
    sup = Supervisor(sink=io.StringIO())
    spec = _spec("stubborn", script=stubborn)
    spec.stop_grace_s = 0.5
    sup.start(spec)
    t0 = time.monotonic()
    sup.stop_all()
    assert time.monotonic() - t0 < 10
