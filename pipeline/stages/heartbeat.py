"""A stage worker's heartbeat file: its pid, whether its partitions are assigned, and its counters.

Every worker writes ``<slot dir>.health.json`` (next to its data slot, e.g. ``var/stages/sluice-stages/
worker-2.health.json``) every ``stages.heartbeat_s`` seconds with an atomic rename, and removes it on a
clean stop. ``sluice status`` reads these files, so it sees every worker on the machine and what each has
processed whatever the config: no web port is needed (four workers could not share one anyway). A file
whose pid is gone says the worker died; one that stopped being refreshed says the worker is stuck.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict

SUFFIX = ".health.json"


class WorkerHeartbeat(BaseModel):
    """What one worker last said about itself."""

    model_config = ConfigDict(frozen=True)

    slot: int
    pid: int
    updated: float  # unix time of the write
    assigned: bool  # partitions assigned and tables recovered (the worker is processing)
    pending_joins: int = 0
    counts: dict[str, int] = {}


def heartbeat_path(slot_dir: Path) -> Path:
    """Where the worker owning ``slot_dir`` (``.../worker-N``) writes its heartbeat."""
    return slot_dir.with_name(slot_dir.name + SUFFIX)


def write_heartbeat(path: Path, beat: WorkerHeartbeat) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with contextlib.suppress(OSError):
        tmp.write_text(beat.model_dump_json())
        os.replace(tmp, path)


def remove_heartbeat(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def read_heartbeats(app_dir: Path) -> list[WorkerHeartbeat]:
    """Every worker heartbeat under ``app_dir`` (``stages.data_dir/<app id>``), by slot."""
    beats = []
    for path in sorted(app_dir.glob(f"worker-*{SUFFIX}")) if app_dir.is_dir() else []:
        with contextlib.suppress(OSError, ValueError):
            beats.append(WorkerHeartbeat.model_validate(json.loads(path.read_text())))
    return sorted(beats, key=lambda b: b.slot)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def age_s(beat: WorkerHeartbeat, now: float | None = None) -> float:
    return max(0.0, (now if now is not None else time.time()) - beat.updated)
