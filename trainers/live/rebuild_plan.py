"""A rebuild that outlives its process: what an erasure's rebuild replays, on disk until it is published.

An erasure's rebuild (``trainers.live.rebuild``) takes a learning line back to its newest untainted
version and replays the later updates without the erased trajectories. The rows it replays are held only
in the trainer's memory, and the erasure deleted the checkpoints that trained on the erased data, so a
trainer that dies between going back and publishing would lose the rebuild. Before the first replayed
update the trainer writes the plan instead, one folder per learning scope under
``<trainer.output_dir>/rebuild/``:

- ``plan.json``: the scope, the version it went back to (``rebuilt_from``) and its version number, the
  tainted versions (``rebuild_of``), the erased and let-go row counts, and the replay batches (redacted
  training rows of the trajectories that were not erased);
- ``weights.safetensors``: the scope's trainable weights (LoRA: the adapters) at ``rebuilt_from``, so a
  restart starts the replay from exactly that version, whichever checkpoint it resumed from.

A restarted trainer replays each plan it finds and publishes it; the plan goes once its version is
published. A plan is a copy of training data, so erasure reaches it too (``erase_from_plans``): the
trainer and the sink's erasure (``sinks.erasure_weights``, which runs while the trainer may be down)
drop the erased trajectories' rows from every pending plan, and a plan whose starting version is itself
tainted is removed whole. Writes go to a temporary file then ``os.replace``: a plan on disk is whole (a
killed writer's partial file is never read, and goes with the next write, erasure or removal).
Importable without Ray or torch (torch is imported where weights are read or written).

    write_plan(root, plan, weights)             # the weights first, then plan.json
    for plan in read_plans(root): ...           # resume: read_weights(root, plan.scope)
    erase_from_plans(root, erased_ids, tainted_versions)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from trainers.live.samples import LiveRow

if TYPE_CHECKING:
    import torch

REBUILD_DIR = "rebuild"  # under the trainer's output_dir
PLAN_FILE = "plan.json"
WEIGHTS_FILE = "weights.safetensors"


class RebuildPlan(BaseModel):
    """One learning line's rebuild, decided and not yet published."""

    model_config = ConfigDict(extra="forbid")

    scope: str
    version: int = Field(
        description="The scope's version number when it went back: replayed updates count on."
    )
    rebuilt_from: str = Field(description="The untainted version the line went back to.")
    rebuild_of: list[str] = Field(description="The tainted versions the rebuild replaces.")
    rows_erased: int = Field(0, description="Rows of erased trajectories left out of the replay.")
    rows_let_go: int = Field(0, description="Rows of the tainted versions no longer held, so not replayed.")
    batches: list[list[LiveRow]] = Field(description="One update's rows per batch, in the line's order.")

    def without(self, erased: set[str]) -> RebuildPlan:
        """The plan with every row of the erased trajectories gone (counted in ``rows_erased``)."""
        batches = [[r for r in b if r.sample.trajectory_id not in erased] for b in self.batches]
        gone = sum(len(b) for b in self.batches) - sum(len(b) for b in batches)
        return self.model_copy(update={"batches": batches, "rows_erased": self.rows_erased + gone})


def rebuild_root(output_dir: str | Path) -> Path:
    return Path(output_dir) / REBUILD_DIR


def plan_dir(root: Path, scope: str) -> Path:
    return root / f"scope-{quote(scope, safe='')}"


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _drop_partials(folder: Path) -> list[Path]:
    """Temporary files a killed writer left: partial copies of a plan's rows or weights."""
    gone = sorted(folder.glob(".*.tmp-*"))
    for path in gone:
        path.unlink(missing_ok=True)
    return gone


def write_plan(root: Path, plan: RebuildPlan, weights: Mapping[str, torch.Tensor]) -> Path:
    """Write the starting weights, then the plan (a reader sees a plan only with its weights beside it)."""
    from safetensors.torch import save

    folder = plan_dir(root, plan.scope)
    folder.mkdir(parents=True, exist_ok=True)
    _drop_partials(folder)
    _atomic_write(folder / WEIGHTS_FILE, save({n: t.detach().cpu().contiguous() for n, t in weights.items()}))
    return rewrite_plan(root, plan)


def rewrite_plan(root: Path, plan: RebuildPlan) -> Path:
    """Replace a pending plan's rows and counts (its weights stay as written)."""
    path = plan_dir(root, plan.scope) / PLAN_FILE
    _atomic_write(path, plan.model_dump_json().encode())
    return path


def read_plans(root: Path) -> list[RebuildPlan]:
    """Every pending plan, by scope; an unreadable one is skipped (it names no rows anyone can replay)."""
    out = []
    for path in sorted(root.glob(f"scope-*/{PLAN_FILE}")):
        if not (path.parent / WEIGHTS_FILE).is_file():
            continue
        try:
            out.append(RebuildPlan.model_validate_json(path.read_bytes()))
        except (OSError, ValidationError):
            continue
    return out


def read_weights(root: Path, scope: str) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(plan_dir(root, scope) / WEIGHTS_FILE))


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
    gone += _drop_partials(folder)
    if not any(folder.iterdir()):
        folder.rmdir()
    return gone


def erase_from_plans(
    root: Path, erased: set[str], tainted: set[str] | frozenset[str] = frozenset()
) -> tuple[list[Path], list[Path]]:
    """Drop the erased trajectories' rows from every pending plan; remove a plan whose starting version
    is in ``tainted`` (its weights learned from them), and every partial file a killed writer left. Returns
    the plans rewritten and the files removed."""
    rewritten: list[Path] = []
    removed: list[Path] = []
    for folder in sorted(root.glob("scope-*")):
        removed += _drop_partials(folder)
    for plan in read_plans(root):
        if plan.rebuilt_from in tainted:
            removed += remove_plan(root, plan.scope)
            continue
        kept = plan.without(erased)
        if kept.rows_erased != plan.rows_erased:
            rewritten.append(rewrite_plan(root, kept))
    return rewritten, removed
