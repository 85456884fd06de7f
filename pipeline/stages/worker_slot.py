"""A data directory of its own for each worker process on a machine.

RocksDB locks its files, so two workers cannot share a table directory. A worker takes the first free
slot ``<data_dir>/worker-<n>`` (an exclusive ``flock`` on ``worker-<n>.lock``, released by the kernel
when the process dies, even by SIGKILL), so ``sluice up`` can start N identical workers and a restarted
worker finds its own slot — and its tables — again.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

from pipeline.stages.exceptions import StagesError

MAX_SLOTS = 256


@dataclass
class WorkerSlot:
    index: int
    datadir: Path
    _fd: int

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _try_lock(path: Path) -> int | None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def acquire_slot(data_dir: Path, index: int | None = None) -> WorkerSlot:
    """Lock slot ``index`` (error if taken), or the first free one."""
    data_dir.mkdir(parents=True, exist_ok=True)
    candidates = [index] if index is not None else list(range(MAX_SLOTS))
    for i in candidates:
        fd = _try_lock(data_dir / f"worker-{i}.lock")
        if fd is not None:
            datadir = data_dir / f"worker-{i}"
            datadir.mkdir(exist_ok=True)
            return WorkerSlot(i, datadir, fd)
    which = f"slot {index} is" if index is not None else f"all {MAX_SLOTS} slots are"
    raise StagesError(f"{which} taken under {data_dir} (another stages worker runs there)")
