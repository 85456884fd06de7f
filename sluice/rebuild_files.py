"""Where a pending rebuild lives on disk, and how erasure reaches it: the layout shared by the live trainer,
which writes the plans (``trainers.live.rebuild_plan``), and the sink's erasure, which filters them while
the trainer may be down (``sinks.erasure_weights``).

One folder per learning scope under ``<trainer.output_dir>/rebuild/``: ``plan.json`` (the typed plan,
``trainers.live.rebuild_plan.RebuildPlan``: ``rebuilt_from``, ``rows_erased`` and ``batches``, lists of rows
whose ``sample.trajectory_id`` names the trajectory they came from) and ``weights.safetensors``. Files are
written to a temporary name then renamed (``atomic_write``), so a file in place is whole; a killed writer's
partial file is dropped by the next write, erasure or removal. Only the JSON fields named here are read, so
this module needs neither pydantic models of the trainer nor torch.

    erase_from_plans(root, erased_ids, tainted_versions)   # rewritten plans, removed files
    delete_checkpoints(checkpoints_dir, tainted_versions, erased_ids)  # checkpoints that hold either
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Collection
from pathlib import Path
from urllib.parse import quote

REBUILD_DIR = "rebuild"  # under the trainer's output_dir
PLAN_FILE = "plan.json"
WEIGHTS_FILE = "weights.safetensors"


def rebuild_root(output_dir: str | Path) -> Path:
    return Path(output_dir) / REBUILD_DIR


def plan_dir(root: Path, scope: str) -> Path:
    return root / f"scope-{quote(scope, safe='')}"


def atomic_write(path: Path, data: bytes, attempts: int = 3) -> None:
    """``data`` at ``path``, whole or not at all (a temporary file, flushed, then renamed into place).

    An erasure drops every temporary file it finds (``drop_partials``: a killed writer's may hold erased
    rows), so a live writer's can vanish before its rename; the write then starts again."""
    for attempt in range(attempts):
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
            return
        except FileNotFoundError:
            if attempt == attempts - 1:
                raise
        finally:
            tmp.unlink(missing_ok=True)


def drop_partials(folder: Path) -> list[Path]:
    """Temporary files a killed writer left: partial copies of a plan's rows or weights."""
    gone = sorted(folder.glob(".*.tmp-*"))
    for path in gone:
        path.unlink(missing_ok=True)
    return gone


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
