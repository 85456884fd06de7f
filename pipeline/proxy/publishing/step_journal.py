"""Publishing: a journal of the next step index per trajectory, so numbering survives a crash.

The history linker's state (which trajectory a call extends, its next step index) is saved as a snapshot
(``links.json``) only when the proxy stops cleanly. After a SIGKILL the next call of a trajectory that
continues across the crash would be numbered from 0 again, and two different steps would claim one
index. So every recorded step also appends ``[tenant, trajectory id, next step index]`` to this journal,
with one ``os.write`` before the step's response is released (it survives the death of the process, like
the write-ahead log). The line also carries the trajectory's delta boundaries as the linker holds them
after the step (message counts with their link and exact hashes) and its tools fingerprint, so that the
next call of a trajectory that continues across a crash records only what is new since this step, not
its whole history again. At start the journal is replayed over the snapshot: a trajectory the snapshot
does not know, or knows at an older step, continues at the journal's index and boundaries (it can no
longer be found by history, only by its id: a history-linked trajectory continues as a new one, it
never overwrites a step). Then a fresh snapshot is written and the journal starts empty; it is also
compacted that way once it exceeds ``max_bytes``. It holds tenant names, trajectory ids and hashes,
never message text.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from sluice.compact_json import compact_json

log = logging.getLogger(__name__)


_LINE = compact_json()  # one journal line: [tenant, trajectory id, next step, boundaries, tools fp]


@dataclass(frozen=True)
class JournalEntry:
    next_step: int
    boundaries: list[list[object]]  # [message count, link hash hex, exact hash] per boundary, oldest first
    tools_fp: str | None


class StepJournal:
    def __init__(self, path: Path, max_bytes: int = 8 * 1024 * 1024) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = None
        self._size = 0

    def entries(self) -> dict[tuple[str, str], JournalEntry]:
        """(tenant, trajectory id) -> the newest entry the journal recorded (intact lines only)."""
        out: dict[tuple[str, str], JournalEntry] = {}
        if not self.path.exists():
            return out
        for line in self.path.read_bytes().split(b"\n"):
            try:
                tenant, tid, next_step, *rest = json.loads(line)
                entry = JournalEntry(
                    int(next_step), list(rest[0]) if rest else [], rest[1] if len(rest) > 1 else None
                )
            except (ValueError, TypeError):
                continue  # empty, or the torn last line of a machine crash
            key = (str(tenant), str(tid))
            if key not in out or out[key].next_step <= entry.next_step:
                out[key] = entry
        return out

    def record(
        self,
        tenant: str,
        trajectory_id: str,
        next_step: int,
        boundaries: list[list[object]] | None = None,
        tools_fp: str | None = None,
    ) -> None:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            self._size = os.fstat(self._fd).st_size
        item = [tenant, trajectory_id, next_step, boundaries or [], tools_fp]
        line = _LINE(item).encode() + b"\n"
        os.write(self._fd, line)
        self._size += len(line)

    @property
    def full(self) -> bool:
        return self._size > self.max_bytes

    def reset(self) -> None:
        """Start empty (a snapshot holding everything the journal said was just written)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self.path.unlink(missing_ok=True)
        self._size = 0

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
