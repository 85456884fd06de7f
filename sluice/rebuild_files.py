"""Where a pending rebuild lives on disk, and how erasure reaches it: the layout shared by the live trainer,
which writes the plans (``trainers.live.rebuild_plan``), and the sink's erasure, which filters them while
the trainer may be down (``sinks.erasure_weights``).

One folder per learning scope under ``<trainer.output_dir>/rebuild/``: ``plan.json`` (the typed plan,
``trainers.live.rebuild_plan.RebuildPlan``: ``rebuilt_from``, ``rows_erased`` and ``batches``, lists of rows
whose ``sample.trajectory_id`` names the trajectory they came from) and ``weights.safetensors``. Files are
written to a temporary name then renamed (``atomic_write``), so a file in place is whole; a dead writer's
partial file is dropped by the next write, erasure or removal (``drop_partials``), a live writer's never. Only the JSON fields named here are read, so
this module needs neither pydantic models of the trainer nor torch.

    erase_from_plans(root, erased_ids, tainted_versions)   # rewritten plans, removed files
    delete_checkpoints(checkpoints_dir, tainted_versions, erased_ids)  # checkpoints that hold either
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from collections.abc import Collection
from pathlib import Path
from urllib.parse import quote

REBUILD_DIR = "rebuild"  # under the trainer's output_dir
PLAN_FILE = "plan.json"
WEIGHTS_FILE = "weights.safetensors"
TMP_MARK = ".tmp-"  # a temporary file: ``.<name>.tmp-<writer tag>``
FOREIGN_STALE_S = 3600.0
"""Age after which another host's temporary file counts as its dead writer's (its liveness is not seen)."""


def rebuild_root(output_dir: str | Path) -> Path:
    return Path(output_dir) / REBUILD_DIR


def plan_dir(root: Path, scope: str) -> Path:
    return root / f"scope-{quote(scope, safe='')}"


def atomic_write(path: Path, data: bytes) -> None:
    """``data`` at ``path``, whole or not at all (a temporary file named for this writer, flushed, then
    renamed into place). ``drop_partials`` leaves the temporary file alone while this process lives."""
    tmp = path.with_name(f".{path.name}{TMP_MARK}{writer_tag()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def drop_partials(folder: Path) -> list[Path]:
    """Temporary files of dead writers (partial copies of a plan's rows or weights); a live writer's stay.

    Liveness, not age: a temporary file is named ``<pid>.<start>@<host>`` for its writer, and on the
    writer's host it is dropped once no process with that pid and that start time runs. A write of a
    plan's weights can take long on a loaded box, so no age is safe for a live writer, and a dead one's
    bytes (they may hold erased rows) go at the first erasure after its death, not an age later. The start
    time (``/proc/<pid>/stat``) tells a reused pid apart, so a dead writer's file never hides behind a new
    process. A file from another host (a shared volume) cannot be probed: it goes once it is older than
    ``FOREIGN_STALE_S``. A name that is not a writer's tag is no live writer's and goes too."""
    now, gone = time.time(), []
    for path in sorted(folder.glob(f".*{TMP_MARK}*")):
        tag = path.name.rpartition(TMP_MARK)[2]
        try:
            if _tag_alive(tag, now - path.stat().st_mtime):
                continue
            path.unlink()
        except FileNotFoundError:
            continue  # renamed or removed meanwhile
        gone.append(path)
    return gone


def _process_start(pid: int) -> str:
    """Start time of process ``pid`` in clock ticks since boot; "" when it is not running (or a zombie:
    killed, not yet reaped); "0" where the system has no ``/proc`` (then the pid alone is probed)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        if not Path("/proc/self/stat").exists():
            return "0" if _pid_runs(pid) else ""
        return ""
    except OSError:
        return ""
    fields = stat.rpartition(")")[2].split()  # from field 3; the command name before ")" may hold spaces
    return "" if fields[0] == "Z" else fields[19]  # field 3 the state, field 22 the start time


def _pid_runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def writer_tag(pid: int | None = None) -> str:
    """The tag naming a temporary file of process ``pid`` (this one by default) on this host."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}.{_process_start(pid)}@{socket.gethostname()}"


def _tag_alive(tag: str, age_s: float) -> bool:
    """Whether the writer a temporary file's tag names may still be writing it."""
    ident, at, host = tag.rpartition("@")
    pid, dot, start = ident.partition(".")
    if not (at and dot and pid.isdigit()):
        return False
    if host != socket.gethostname():
        return age_s < FOREIGN_STALE_S
    return _process_start(int(pid)) == start


def remove_plan(root: Path, scope: str) -> list[Path]:
    """Delete a scope's plan (the plan first: weights without a plan are never resumed) and any partial
    file a killed writer left; the paths gone."""
    folder = plan_dir(root, scope)
    if not folder.is_dir():
        return []
    gone = []
    for name in (PLAN_FILE, WEIGHTS_FILE):
        path = folder / name
        if path.exists():
            path.unlink()
            gone.append(path)
    gone += drop_partials(folder)
    if not any(folder.iterdir()):
        folder.rmdir()
    return gone


def erase_from_plans(
    root: Path, erased: set[str], tainted: set[str] | frozenset[str] = frozenset()
) -> tuple[list[Path], list[Path]]:
    """Drop the erased trajectories' rows from every pending plan (counted in its ``rows_erased``); remove a
    plan whose starting version is in ``tainted`` (its weights learned from them), and every partial file
    a killed writer left. Returns the plans rewritten and the files removed. A plan that cannot be read is
    skipped: no reader resumes it either."""
    rewritten: list[Path] = []
    removed: list[Path] = []
    for folder in sorted(root.glob("scope-*")):
        removed += drop_partials(folder)
        path = folder / PLAN_FILE
        if not path.is_file() or not (folder / WEIGHTS_FILE).is_file():
            continue
        try:
            plan = json.loads(path.read_bytes())
            if plan["rebuilt_from"] in tainted:
                removed += remove_plan(root, plan["scope"])
                continue
            batches = [[r for r in b if r["sample"]["trajectory_id"] not in erased] for b in plan["batches"]]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        gone = sum(map(len, plan["batches"])) - sum(map(len, batches))
        if gone:
            plan.update(batches=batches, rows_erased=plan.get("rows_erased", 0) + gone)
            atomic_write(path, json.dumps(plan).encode())
            rewritten.append(path)
    return rewritten, removed


def delete_checkpoints(root: Path, versions: Collection[str], erased: Collection[str] = ()) -> list[Path]:
    """Delete each trainer checkpoint under ``root`` (a folder holding ``trainer_state.json``) that holds one
    of ``versions`` or took rows of an ``erased`` trajectory into a batch not yet trained; returns them. An
    unreadable state file is left alone (a checkpoint being written)."""
    gone: list[Path] = []
    for state in sorted(root.glob("*/trainer_state.json")):
        try:
            saved = json.loads(state.read_text())
        except (OSError, ValueError):
            continue
        if str(saved.get("policy_version")) in versions or set(erased) & set(
            saved.get("taken_versions") or {}
        ):
            shutil.rmtree(state.parent, ignore_errors=True)
            gone.append(state.parent)
    return gone
