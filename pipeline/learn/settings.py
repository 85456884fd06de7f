"""The learning demo's config: the embedded default with SmolLM2 serving and the trainer in live mode.

``learning_config`` takes the YAML the user runs (the embedded default unless ``--config``) and changes only
what the loop needs: the local model server serves the real instruct model under ``smollm2*`` (the agents'
model name routes to it), and the trainer runs in live mode on that traffic and pushes every new version
to that server directly (``trainer.promotion: direct``: the ledger records each as ungated), and one
stage worker is enough for this traffic (a few steps a second) and leaves the CPU to
the model and the learner. Everything else (tenants, redaction, eligibility, rewards) stays as configured.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from trainers.smollm2 import SMOLLM2_NAME, smollm2_dir

AGENT_MODEL = "smollm2-learn"


class LearnSettings(BaseModel):
    """Knobs of ``sluice demo --learn`` (the loop's own, not the stack's)."""

    model_config = ConfigDict(frozen=True)

    model: str = SMOLLM2_NAME
    group_size: int = Field(4, ge=2, description="Attempts per problem: one GRPO group.")
    update_samples: int = Field(16, ge=1)
    learning_rate: float = Field(3e-4, gt=0)
    lora_rank: int = Field(16, ge=0)
    max_staleness: int = Field(3, ge=0)


def learning_config(data: dict[str, Any], out_dir: Path, s: LearnSettings) -> dict[str, Any]:
    """A copy of the config ``data`` with the local model serving ``s.model`` and the live trainer on."""
    data = yaml.safe_load(yaml.safe_dump(data))
    backend = data.get("up", {}).get("local_model_backend") or data["proxy"]["backends"][0]["name"]
    chosen = next(b for b in data["proxy"]["backends"] if b["name"] == backend)
    chosen["models"] = ["smollm2*"]
    chosen["return_token_ids"] = True
    chosen.pop("model_version", None)  # the policy server names its own version on every response
    port = int(chosen["base_url"].rsplit(":", 1)[1].split("/")[0])
    trainer = data.setdefault("trainer", {})
    trainer.update(
        mode="live",
        model=str(smollm2_dir()) if s.model == SMOLLM2_NAME else s.model,  # its cached HF directory
        models=["smollm2*"],
        output_dir=str(out_dir / "trainer"),
        policy_servers=[f"http://127.0.0.1:{port}"],
        group_size=s.group_size,
        max_staleness=s.max_staleness,
        learning_rate=s.learning_rate,
        poll_timeout_s=0.5,
        progress=False,
        promotion="direct",  # the demo shows learning itself; the ledger records each version as ungated
    )
    trainer["serve"] = {
        **trainer.get("serve", {}),
        "model_name": "smollm2",
        "port": port,
        "keep_versions": 2,
        "events_log": str(out_dir / "policy_events.jsonl"),
    }
    trainer["live"] = {
        **trainer.get("live", {}),
        "group_wait_s": 30,
        "update_samples": s.update_samples,
        "max_update_samples": 2 * s.update_samples,
        "update_wait_s": 5,
        "lora_rank": s.lora_rank,
        "lora_alpha": 2.0 * max(1, s.lora_rank),
        "default_scope": "shared",  # one policy for the demo's tenants, served to all of them
    }
    data.setdefault("up", {})["local_model_backend"] = backend
    data.setdefault("stages", {})["workers"] = 1
    return data
