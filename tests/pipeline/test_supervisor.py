"""The supervisor runs real child processes: prefixed logs, readiness, death detection, ordered stop."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from pipeline.supervisor import ServiceSpec, Supervisor, SupervisorError
from pipeline.up_config import UpConfig

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


def _policy(**kw: float) -> UpConfig:
    base = {"restart_backoff_s": 0.1, "restart_backoff_max_s": 0.4, "restart_fast_failure_s": 3.0}
    return UpConfig(**{**base, **kw})


def _supervising(sup: Supervisor) -> tuple[threading.Event, threading.Thread, list[BaseException]]:
    stop, errors = threading.Event(), []

    def run() -> None:
        try:
            sup.supervise(stop, poll_s=0.05)
        except BaseException as err:  # noqa: BLE001 - handed to the test
            errors.append(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return stop, thread, errors


def test_crashed_service_is_restarted_and_counted(tmp_path: Path) -> None:
    out = io.StringIO()
    state = tmp_path / "up.json"
    sup = Supervisor(sink=out, policy=_policy(), state_path=state)
    sup.start(_spec("alpha"))
    first = sup.pid("alpha")
    stop, thread, errors = _supervising(sup)
    try:
        os.kill(first, signal.SIGKILL)
        deadline = time.monotonic() + 15
        while (sup.pid("alpha") == first or sup.dead()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sup.pid("alpha") != first and sup.dead() == [] and sup.restarts() == {"alpha": 1}
        data = json.loads(state.read_text())
        assert data["services"]["alpha"]["restarts"] == 1
        assert data["services"]["alpha"]["last_exit"] == "killed by SIGKILL"
        assert "alpha exited (killed by SIGKILL)" in out.getvalue()  # says why
    finally:
        stop.set()
        thread.join(5)
        sup.stop_all()
    assert errors == []


def test_gives_up_after_repeated_fast_failures() -> None:
    out = io.StringIO()
    sup = Supervisor(sink=out, policy=_policy(restart_max_fast_failures=3))
    sup.start(
        _spec("flaky", script="import time; print('ready', flush=True); time.sleep(0.2); raise SystemExit(4)")
    )
    stop, thread, errors = _supervising(sup)
    thread.join(30)
    stop.set()
    sup.stop_all()
    assert len(errors) == 1 and isinstance(errors[0], SupervisorError)
    assert "3 times in a row" in str(errors[0]) and "exit code 4" in str(errors[0])
    text = out.getvalue()
    assert text.count("flaky restarted") == 2 and "giving up" in text
    # the backoff doubles with every fast failure in a row
    assert "restarting it in 0.1s" in text and "restarting it in 0.2s" in text


def test_quiet_mode_prints_one_line_per_service_and_logs_each_to_its_file(tmp_path: Path) -> None:
    out = io.StringIO()
    sup = Supervisor(log_path=tmp_path / "up.log", sink=out, log_dir=tmp_path, echo=False)
    sup.start(ServiceSpec("alpha", [sys.executable, "-c", CHILD, "alpha"], ready_timeout_s=20, stop_grace_s=5,
                          endpoint="http://127.0.0.1:1/v1"))  # fmt: skip
    sup.start(_spec("beta"))
    sup.stop_all()
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and "alpha ready" not in out.getvalue()
    assert re.match(
        r"\s+alpha\s+up\s+[\d.]+s\s+pid \d+\s+http://127.0.0.1:1/v1\s+log .*alpha\.log$", lines[0]
    )
    assert lines[1].split()[:2] == ["beta", "up"]
    assert (tmp_path / "alpha.log").read_text().splitlines() == ["alpha ready", "alpha stopping"]
    assert "beta ready" in (tmp_path / "beta.log").read_text()
    assert "alpha ready" in (tmp_path / "up.log").read_text()  # the combined log keeps every line
