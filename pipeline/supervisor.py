"""Run Sluice services as child processes: one prefixed log stream, readiness, ordered clean shutdown.

Each service is its own CLI command (``sluice proxy``, ``sluice stages``, ...), so what ``sluice up`` runs on
one box is exactly what a deployment runs on many. Children are started in order, each waited on until
ready (a log line or a probe), and stopped in reverse order with SIGTERM, then SIGKILL after a grace period.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from sluice.errors import SluiceError

COLORS = ["36", "35", "33", "32", "34", "31", "96", "95"]
READY_LINE = re.compile(r"\bready\b", re.IGNORECASE)


class SupervisorError(SluiceError):
    """A service failed to start or died."""


@dataclass
class ServiceSpec:
    """How to start one service and how to tell it is ready."""

    name: str
    argv: list[str]
    ready_line: re.Pattern[str] | None = READY_LINE
    ready_probe: Callable[[], bool] | None = None
    ready_timeout_s: float = 120.0
    env: dict[str, str] = field(default_factory=dict)
    stop_grace_s: float = 15.0


def sluice_argv(command: str, *args: str, config: Path | None = None) -> list[str]:
    """argv that runs ``sluice COMMAND`` with this interpreter (works without the console script on PATH)."""
    argv = [sys.executable, "-m", "sluice.cli", command, *args]
    if config is not None:
        argv += ["--config", str(config)]
    return argv


class _Child:
    def __init__(self, spec: ServiceSpec, color: str, sink: TextIO, log_file: TextIO | None) -> None:
        self.spec = spec
        self.ready = threading.Event()
        self.lines: list[str] = []
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **spec.env}
        self.proc = subprocess.Popen(
            spec.argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            text=True,
            errors="replace",
            bufsize=1,
            start_new_session=True,  # Ctrl-C reaches the supervisor only; it stops children in order
        )
        self._prefix = f"\033[{color}m{spec.name:>11}\033[0m | " if sink.isatty() else f"{spec.name:>11} | "
        self._plain = f"{spec.name:>11} | "
        self._sink, self._log = sink, log_file
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._pump, name=f"log-{spec.name}", daemon=True)
        self._reader.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            self.lines = self.lines[-200:] + [line]
            if self.spec.ready_line is not None and self.spec.ready_line.search(line):
                self.ready.set()
            with self._lock:
                self._sink.write(self._prefix + line + "\n")
                self._sink.flush()
                if self._log is not None:
                    self._log.write(self._plain + line + "\n")
                    self._log.flush()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if not self.alive():
            return
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(self.spec.stop_grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._reader.join(2)


class Supervisor:
    """Starts services in order, waits for each to be ready, stops them in reverse order."""

    def __init__(self, log_path: Path | None = None, sink: TextIO | None = None) -> None:
        self._children: list[_Child] = []
        self._sink = sink or sys.stdout
        self._log: TextIO | None = None
        if log_path is not None:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(log_path, "a")  # noqa: SIM115 - closed in stop_all()

    def start(self, spec: ServiceSpec) -> None:
        self.start_together([spec])

    def start_together(self, specs: list[ServiceSpec]) -> None:
        """Start several services at once (e.g. stage workers joining one group), then wait for each."""
        children = []
        for spec in specs:
            children.append(_Child(spec, COLORS[len(self._children) % len(COLORS)], self._sink, self._log))
            self._children.append(children[-1])
        for child in children:
            self._wait_ready(child)

    def _wait_ready(self, child: _Child) -> None:
        spec = child.spec
        deadline = time.monotonic() + spec.ready_timeout_s
        while time.monotonic() < deadline:
            if not child.alive():
                tail = "\n".join(child.lines[-15:])
                raise SupervisorError(
                    f"{spec.name} exited with code {child.proc.returncode} while starting:\n{tail}"
                )
            if spec.ready_probe is not None and spec.ready_probe():
                return
            if spec.ready_probe is None and child.ready.wait(0.1):
                return
            time.sleep(0.1)
        raise SupervisorError(f"{spec.name} was not ready within {spec.ready_timeout_s:.0f}s")

    def names(self) -> list[str]:
        return [c.spec.name for c in self._children]

    def dead(self) -> list[str]:
        """Names of services that exited on their own."""
        return [c.spec.name for c in self._children if not c.alive()]

    def _child(self, name: str) -> _Child:
        return next(c for c in self._children if c.spec.name == name)

    def pid(self, name: str) -> int:
        return self._child(name).proc.pid

    def kill(self, name: str, sig: int = signal.SIGKILL) -> int:
        """Send ``sig`` to a service (SIGKILL by default) and wait for it to exit; returns its exit code."""
        child = self._child(name)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.proc.pid, sig)
        return child.proc.wait(30)

    def signal(self, name: str, sig: int) -> None:
        """Send ``sig`` to a service's process group without waiting (e.g. SIGSTOP / SIGCONT)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._child(name).proc.pid, sig)

    def stop(self, name: str) -> None:
        """Stop one service cleanly (SIGTERM, then SIGKILL after its grace period)."""
        self._child(name).stop()

    def restart(self, name: str, env: dict[str, str] | None = None, wait_ready: bool = True) -> None:
        """Start a stopped or killed service again from its spec, in its place in the stop order."""
        old = self._child(name)
        old.stop()
        spec = (
            old.spec if env is None else ServiceSpec(**{**old.spec.__dict__, "env": {**old.spec.env, **env}})
        )
        index = self._children.index(old)
        child = _Child(spec, COLORS[index % len(COLORS)], self._sink, self._log)
        self._children[index] = child
        if wait_ready:
            self._wait_ready(child)

    def stop_all(self) -> None:
        for child in reversed(self._children):
            child.stop()
        self._children.clear()
        if self._log is not None:
            self._log.close()
            self._log = None

    def wait_forever(self, poll_s: float = 0.5) -> None:
        """Block until Ctrl-C/SIGTERM or until a service dies (then raise)."""
        stop = threading.Event()
        previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
        try:
            while not stop.wait(poll_s):
                dead = self.dead()
                if dead:
                    raise SupervisorError(f"service(s) exited: {', '.join(dead)}")
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGTERM, previous)
