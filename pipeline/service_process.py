"""One supervised service: how to start it (``ServiceSpec``) and its running process (``ServiceProcess``).

A ``ServiceProcess`` starts the service in a session of its own (a Ctrl-C reaches the supervisor only,
which stops the children in order), pumps its output line by line to the combined log, its own log file
and, when echoing, the terminal with a coloured prefix, and sets ``ready`` when a line matches the spec's
ready pattern. ``stop`` sends SIGTERM, then SIGKILL to the whole group after the spec's grace period.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

COLORS = ["36", "35", "33", "32", "34", "31", "96", "95"]
READY_LINE = re.compile(r"\bready\b", re.IGNORECASE)


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
    endpoint: str = ""  # shown on its status line (e.g. the proxy's URL)
    after_restart: Callable[[], None] | None = None  # e.g. the broker: create the topics again
    # services (names or name prefixes) stopped before this one restarts and started again after its
    # ``after_restart`` step: e.g. the broker's consumers, whose local state is carried into a new broker
    dependents: tuple[str, ...] = ()


class ServiceProcess:
    def __init__(
        self,
        spec: ServiceSpec,
        color: str,
        sink: TextIO | None,
        log_file: TextIO | None,
        service_log: TextIO | None = None,
    ) -> None:
        self.spec = spec
        self.ready = threading.Event()
        self.lines: list[str] = []
        self.started_at = time.monotonic()
        self.restarts = 0
        self.fast_failures = 0
        self.last_exit: str | None = None
        self.restart_at: float | None = None  # a restart is scheduled for this time
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
        tty = sink is not None and sink.isatty()
        self._prefix = f"\033[{color}m{spec.name:>11}\033[0m | " if tty else f"{spec.name:>11} | "
        self._plain = f"{spec.name:>11} | "
        self._sink, self._log, self._service_log = sink, log_file, service_log
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
            with self._lock, contextlib.suppress(ValueError):  # a log closed by stop_all
                if self._sink is not None:
                    self._sink.write(self._prefix + line + "\n")
                    self._sink.flush()
                if self._log is not None:
                    self._log.write(self._plain + line + "\n")
                    self._log.flush()
                if self._service_log is not None:
                    self._service_log.write(line + "\n")
                    self._service_log.flush()

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
