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
published. A plan is a copy of training data, so erasure reaches it too (``sluice.rebuild_files``
``erase_from_plans``): the
trainer and the sink's erasure (``sinks.erasure_weights``, which runs while the trainer may be down)
drop the erased trajectories' rows from every pending plan, and a plan whose starting version is itself
tainted is removed whole. The file layout and atomic writes are ``sluice.rebuild_files``'s.
Importable without Ray or torch (torch is imported where weights are read or written).

    write_plan(root, plan, weights)             # the weights first, then plan.json
    for plan in read_plans(root): ...           # resume: read_weights(root, plan.scope)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sluice.rebuild_files import PLAN_FILE, WEIGHTS_FILE, atomic_write, drop_partials, plan_dir
from trainers.live.samples import LiveRow

if TYPE_CHECKING:
    import torch


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


def write_plan(root: Path, plan: RebuildPlan, weights: Mapping[str, torch.Tensor]) -> Path:
    """Write the starting weights, then the plan (a reader sees a plan only with its weights beside it)."""
    from safetensors.torch import save

    folder = plan_dir(root, plan.scope)
    folder.mkdir(parents=True, exist_ok=True)
    drop_partials(folder)
    atomic_write(folder / WEIGHTS_FILE, save({n: t.detach().cpu().contiguous() for n, t in weights.items()}))
    path = folder / PLAN_FILE
    atomic_write(path, plan.model_dump_json().encode())
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
