"""The learner's current policy version, where `sluice status` and other processes read it:
``<trainer.output_dir>/policy_state.json``, rewritten atomically after every update (and at start, once the
policy servers are aligned). Every metrics.jsonl line carries ``policy_version`` too.

    python -c "from pathlib import Path; from trainers.live.policy_state import read_policy_state; \\
               print(read_policy_state(Path('var/trainer')))"
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

POLICY_STATE_FILE = "policy_state.json"


class PolicyState(BaseModel):
    mode: str = "live"
    policy_version: int
    step: int = 0
    serving_versions: dict[str, str] = Field(
        default_factory=dict, description="Policy server -> the version it served at the last push."
    )
    last_push_version: int | None = None
    scope_versions: dict[str, int] = Field(
        default_factory=dict, description="Learning scope -> its newest version number."
    )
    updated_at: datetime = Field(default_factory=lambda: datetime.now(UTC))


def write_policy_state(output_dir: Path, state: PolicyState) -> Path:
    output_dir.mkdir(parents=True, exist_ok=True)
    final = output_dir / POLICY_STATE_FILE
    tmp = final.with_suffix(".tmp")
    tmp.write_text(state.model_dump_json(indent=2))
    tmp.rename(final)
    return final


def read_policy_state(output_dir: Path) -> PolicyState | None:
    """None when no live learner has written one (or it is unreadable)."""
    try:
        return PolicyState.model_validate(json.loads((output_dir / POLICY_STATE_FILE).read_text()))
    except (FileNotFoundError, ValueError):
        return None
