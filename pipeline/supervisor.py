"""Run Sluice services as child processes: one prefixed log stream, readiness, restarts, ordered shutdown.

Each service is its own CLI command (``sluice proxy``, ``sluice stages``, ...), so what ``sluice up`` runs on
one box is exactly what a deployment runs on many. Children are started in order, each waited on until
ready (a log line or a probe), and stopped in reverse order with SIGTERM, then SIGKILL after a grace period.

While ``supervise`` runs, a service that exits on its own is restarted from its spec: after
``restart_backoff_s``, doubling (to ``restart_backoff_max_s``) with every fast failure in a row (one that
died within ``restart_fast_failure_s`` of its start); the supervisor says why it restarts (exit code or
signal, the service's last lines) and gives up, stopping everything, after ``restart_max_fast_failures``
fast failures in a row. A service that stayed up longer starts over from the first backoff. The services,
their pids, states and restart counts go to ``up.state_file`` (``sluice status`` shows them).

Each service's process (its start, log pump and stop) is a ``ServiceProcess`` (``service_process.py``).
Logs: every line goes to the combined log file (``up.log``) and, with ``log_dir``, to ``<service>.log``;
with ``echo`` (``--verbose``) also to the terminal, prefixed. Quiet (``echo=False``), the terminal gets one
status line per service once it is ready, and the supervisor's own lines (restarts and why).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TextIO

from pipeline.service_process import COLORS, ServiceProcess, ServiceSpec
from pipeline.up_config import UpConfig
from sluice.errors import SluiceError

__all__ = ["ServiceSpec", "Supervisor", "SupervisorError", "describe_exit", "shown_path", "sluice_argv"]


class SupervisorError(SluiceError):
    """A service failed to start or died."""


def sluice_argv(command: str, *args: str, config: Path | None = None) -> list[str]:
    """argv that runs ``sluice COMMAND`` with this interpreter (works without the console script on PATH)."""
    argv = [sys.executable, "-m", "app.cli", command, *args]
    if config is not None:
        argv += ["--config", str(config)]
    return argv


def shown_path(path: Path) -> str:
    """A path as a user reads it: relative to the working directory when it lies under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def describe_exit(code: int | None) -> str:
    if code is None:
        return "running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class Supervisor:
    """Starts services in order, waits for each to be ready, restarts crashed ones while it supervises,
    stops them in reverse order."""

    def __init__(
        self,
        log_path: Path | None = None,
        sink: TextIO | None = None,
        policy: UpConfig | None = None,
        state_path: Path | None = None,
        log_dir: Path | None = None,
        echo: bool = True,
    ) -> None:
        self._children: list[ServiceProcess] = []
        self._sink = sink or sys.stdout
        self._log: TextIO | None = None
        self.log_dir = log_dir  # one <service>.log each, when set
        self.echo = echo  # stream every service's lines to the sink; quiet: one status line per service
        self._service_logs: dict[str, TextIO] = {}
        self.policy = policy or UpConfig()
        self.state_path = state_path
        self._lock = threading.RLock()  # supervise() runs in its own thread in tests and benchmarks
        if log_path is not None:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(log_path, "a")  # noqa: SIM115 - closed in stop_all()

    def start(self, spec: ServiceSpec) -> None:
        self.start_together([spec])

    def start_together(self, specs: list[ServiceSpec]) -> None:
        """Start several services at once (e.g. stage workers joining one group), then wait for each."""
        self.await_ready(self.launch(specs))

    def launch(self, specs: list[ServiceSpec]) -> list[ServiceProcess]:
        """Start services without waiting for them (``await_ready`` waits): one that needs nothing the
        others start (the model server) comes up while they do."""
        children = []
        for spec in specs:
            children.append(self._spawn(spec, len(self._children)))
            self._children.append(children[-1])
        return children

    def await_ready(self, children: list[ServiceProcess]) -> None:
        """Wait until each of ``children`` (from ``launch``) is ready, in order; one line each when quiet."""
        for child in children:
            self._wait_ready(child)
            if not self.echo:
                self._announce(child, time.monotonic() - child.started_at)
        self.write_state()

    def _spawn(self, spec: ServiceSpec, index: int) -> ServiceProcess:
        service_log = None
        if self.log_dir is not None:
            service_log = self._service_logs.get(spec.name)
            if service_log is None:
                self.log_dir.mkdir(parents=True, exist_ok=True)
                service_log = open(self.service_log_path(spec.name), "a")  # noqa: SIM115 - closed in stop_all()
                self._service_logs[spec.name] = service_log
        sink = self._sink if self.echo else None
        return ServiceProcess(spec, COLORS[index % len(COLORS)], sink, self._log, service_log)

    def service_log_path(self, name: str) -> Path | None:
        return None if self.log_dir is None else self.log_dir / f"{name}.log"

    def _announce(self, child: ServiceProcess, seconds: float) -> None:
        """The quiet mode's one line per service: ready, how fast, its pid, endpoint and log file."""
        spec = child.spec
        log = self.service_log_path(spec.name)
        where = f"  {spec.endpoint}" if spec.endpoint else ""
        self._sink.write(
            f"  {spec.name:<10} up   {seconds:5.1f}s  pid {child.proc.pid:<7}{where}"
            + (f"  log {shown_path(log)}" if log is not None else "")
            + "\n"
        )
        self._sink.flush()

    def _wait_ready(self, child: ServiceProcess) -> None:
        spec = child.spec
        deadline = time.monotonic() + spec.ready_timeout_s
        while time.monotonic() < deadline:
            if not child.alive():
                tail = "\n".join(child.lines[-15:])
                log = self.service_log_path(spec.name)
                raise SupervisorError(
                    f"{spec.name} exited with code {child.proc.returncode} while starting"
                    + (f" (its log: {shown_path(log)})" if log is not None else "")
                    + f":\n{tail}"
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

    def _child(self, name: str) -> ServiceProcess:
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
        with self._lock:
            index = self._children.index(old)
            child = self._spawn(spec, index)
            child.restarts = old.restarts
            self._children[index] = child
        if wait_ready:
            self._wait_ready(child)
        self.write_state()

    def stop_all(self) -> None:
        with self._lock:
            for child in reversed(self._children):
                child.stop()
            self._children.clear()
            self.write_state()
            if self._log is not None:
                self._log.close()
                self._log = None
            for f in self._service_logs.values():
                f.close()
            self._service_logs.clear()

    # ------------------------------------------------------------------ supervision

    def say(self, text: str) -> None:
        """A line of the supervisor's own in the log stream."""
        line = f"{'supervisor':>11} | {text}\n"
        self._sink.write(line)
        self._sink.flush()
        if self._log is not None:
            self._log.write(line)
            self._log.flush()

    def restarts(self) -> dict[str, int]:
        return {c.spec.name: c.restarts for c in self._children}

    def check(self) -> None:
        """Restart what died (when its backoff is over); raise once a service failed fast too often."""
        p = self.policy
        changed = False
        with self._lock:
            now = time.monotonic()
            for index, child in enumerate(list(self._children)):
                if child.alive():
                    if child.fast_failures and now - child.started_at >= p.restart_fast_failure_s:
                        child.fast_failures = 0  # it stayed up: the next failure starts the backoff over
                    continue
                if child.restart_at is None:
                    self._schedule_restart(child, now)
                    changed = True
                elif now >= child.restart_at:
                    self._respawn(index, child)
                    changed = True
                    if child.spec.dependents:
                        break  # its dependents were replaced: the next check sees the new list
        if changed:
            self.write_state()

    def _schedule_restart(self, child: ServiceProcess, now: float) -> None:
        p = self.policy
        name, ran = child.spec.name, now - child.started_at
        child.last_exit = describe_exit(child.proc.returncode)
        child.fast_failures = child.fast_failures + 1 if ran < p.restart_fast_failure_s else 0
        tail = " / ".join(line.strip() for line in child.lines[-3:] if line.strip())[-400:]
        if child.fast_failures >= p.restart_max_fast_failures:
            self.say(f"{name} failed {child.fast_failures} times in a row, each within "
                     f"{p.restart_fast_failure_s:.0f}s of its start ({child.last_exit}): giving up")  # fmt: skip
            raise SupervisorError(
                f"{name} keeps failing ({child.fast_failures} times in a row within "
                f"{p.restart_fast_failure_s:.0f}s of starting; last: {child.last_exit}). Its last lines:\n"
                + "\n".join(child.lines[-15:])
            )
        delay = min(p.restart_backoff_max_s, p.restart_backoff_s * 2 ** max(0, child.fast_failures - 1))
        child.restart_at = now + delay
        self.say(f"{name} exited ({child.last_exit}) after {ran:.1f}s; restarting it in {delay:.1f}s "
                 f"(restart {child.restarts + 1}). Last lines: {tail or '-'}")  # fmt: skip

    def _respawn(self, index: int, old: ServiceProcess) -> None:
        held = self._hold(old.spec.dependents)
        child = self._spawn(old.spec, index)
        child.restarts, child.fast_failures, child.last_exit = (
            old.restarts + 1,
            old.fast_failures,
            old.last_exit,
        )
        self._children[index] = child
        self.say(f"{old.spec.name} restarted (pid {child.proc.pid}, restart {child.restarts})")
        if old.spec.after_restart is not None:
            try:
                old.spec.after_restart()
            except Exception as err:  # noqa: BLE001 - reported; the service itself keeps being watched
                self.say(f"{old.spec.name}: after-restart step failed: {err}")
        if held:
            self._release(held)

    def _hold(self, dependents: tuple[str, ...]) -> list[ServiceProcess]:
        """Stop every service named by ``dependents`` (all at once: SIGTERM to each, then the waits)."""
        if not dependents:
            return []
        held = [c for c in self._children if c.spec.name.startswith(dependents)]
        for child in held:
            if child.alive():
                with contextlib.suppress(ProcessLookupError):
                    child.proc.send_signal(signal.SIGTERM)
        for child in held:
            child.stop()
        if held:
            self.say("stopped " + ", ".join(c.spec.name for c in held) + " until the restart is done")
        return held

    def _release(self, held: list[ServiceProcess]) -> None:
        """Start held services again, in their places, together (stage workers join one group), and wait
        until each is ready. Being held is not a crash: restart counts stay as they were."""
        fresh: list[ServiceProcess] = []
        for old in held:
            index = self._children.index(old)
            child = self._spawn(old.spec, index)
            child.restarts, child.last_exit = old.restarts, old.last_exit
            self._children[index] = child
            fresh.append(child)
        self.write_state()
        for child in fresh:
            try:
                self._wait_ready(child)
            except SupervisorError as err:  # it is watched like any service: a death restarts it
                self.say(f"{child.spec.name} did not come back ready: {err}")
        self.say("started again: " + ", ".join(c.spec.name for c in fresh))

    def supervise(self, stop: threading.Event, poll_s: float = 0.25) -> None:
        """Restart crashed services until ``stop`` is set (raises ``SupervisorError`` on giving up)."""
        while not stop.wait(poll_s):
            self.check()

    def write_state(self) -> None:
        """Services, pids, states and restart counts, for ``sluice status`` (atomic rename)."""
        if self.state_path is None:
            return
        services = {
            c.spec.name: {
                "pid": c.proc.pid,
                "state": "up" if c.alive() else ("restarting" if c.restart_at else "down"),
                "restarts": c.restarts,
                "last_exit": c.last_exit,
            }
            for c in self._children
        }
        data = {"supervisor_pid": os.getpid(), "updated": time.time(), "services": services}
        with contextlib.suppress(OSError):
            self.state_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.state_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(data))
            os.replace(tmp, self.state_path)

    def wait_forever(self, poll_s: float = 0.5) -> None:
        """Supervise until Ctrl-C/SIGTERM; raises ``SupervisorError`` when a service keeps failing."""
        stop = threading.Event()
        previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
        try:
            self.supervise(stop, poll_s)
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGTERM, previous)
