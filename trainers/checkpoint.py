"""Checkpoints in Hugging Face format: save_pretrained for model and tokenizer, plus trainer_state.json
(policy version, step, feeder offsets, trajectory versions already taken) and the optimizer state.

Layout: ``<output_dir>/checkpoints/step-00000010/``. A checkpoint is written to a temporary folder and renamed
into place, so a crash never leaves a half-written "latest". ``latest_checkpoint`` picks the highest step
that has a trainer_state.json; ``sluice serve-model`` and ``sluice train --resume`` both use it.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel, Field

from trainers.exceptions import CheckpointError

STATE_FILE = "trainer_state.json"
OPTIMIZER_FILE = "optimizer.pt"


class TrainerState(BaseModel):
    """What `--resume` needs besides the weights."""

    policy_version: int = 0
    step: int = 0
    samples: int = 0
    feeder_offsets: dict[str, dict[int, int]] = Field(
        default_factory=dict, description="topic -> partition -> next offset to read."
    )
    taken_versions: dict[str, int] = Field(
        default_factory=dict, description="trajectory id -> highest version already turned into a task."
    )
    model: str = ""
    saved_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    last_metrics: dict[str, Any] = Field(default_factory=dict)


def checkpoints_dir(output_dir: Path) -> Path:
    return output_dir / "checkpoints"


def save_checkpoint(
    output_dir: Path,
    model: torch.nn.Module,
    tokenizer: Any,
    state: TrainerState,
    optimizer_state: dict[str, Any] | None = None,
    keep: int = 3,
) -> Path:
    """Write one checkpoint atomically; prune to the newest ``keep``."""
    root = checkpoints_dir(output_dir)
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{state.step:08d}"
    tmp = root / f".tmp-{final.name}"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(str(tmp))
    tokenizer.save_pretrained(str(tmp))
    if optimizer_state is not None:
        torch.save(optimizer_state, tmp / OPTIMIZER_FILE)
    (tmp / STATE_FILE).write_text(state.model_dump_json(indent=2))
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    for old in list_checkpoints(output_dir)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def list_checkpoints(output_dir: Path) -> list[Path]:
    """Complete checkpoints, oldest first."""
    root = checkpoints_dir(output_dir)
    if not root.is_dir():
        return []
    done = [p for p in root.glob("step-*") if (p / STATE_FILE).is_file()]
    return sorted(done, key=lambda p: p.name)


def latest_checkpoint(output_dir: Path) -> Path | None:
    found = list_checkpoints(output_dir)
    return found[-1] if found else None


def read_state(path: Path) -> TrainerState:
    try:
        return TrainerState.model_validate(json.loads((path / STATE_FILE).read_text()))
    except FileNotFoundError:
        raise CheckpointError(f"{path} is not a trainer checkpoint (no {STATE_FILE})") from None
    except ValueError as err:
        raise CheckpointError(f"{path / STATE_FILE} is unreadable: {err}") from None


def read_optimizer_state(path: Path) -> dict[str, Any] | None:
    f = path / OPTIMIZER_FILE
    return torch.load(f, weights_only=True) if f.is_file() else None
