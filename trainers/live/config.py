"""Config of the trainer's live mode (``trainer.live``): how traffic becomes GRPO groups, when an update
runs, what the decoupled loss caps, and where new weights go.

Kept free of torch so that ``app.config`` imports it cheaply. The staleness bound and policy
(``trainer.max_staleness``, ``stale_policy``, ``stale_decay``), the PPO clip and IcePop mask
(``clip_low``/``clip_high``/``mask_low``/``mask_high``), ``group_size``, ``scale_rewards``, ``loss_agg``,
``learning_rate``, ``micro_batch_size`` and ``policy_servers`` are the trainer's own keys, shared by both
modes.

    trainer:
      mode: live                 # auto: live when trainer.task.kind is traffic
      max_staleness: 2
      policy_servers: [http://127.0.0.1:8788]   # default: the local serve-model
      live:
        group_wait_s: 20
        update_samples: 16
        default_scope: own       # each opted-in tenant trains its own version line...
        scopes: {globex: shared} # ...unless it allows pooling

Learning scopes: each scope has its own weights, optimizer state, version sequence (``acme.3``; the shared
scope's are plain integers), staleness and lineage; a row trains only its tenant's scope.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from sluice.evolution import SHARED_SCOPE, LearningScope
from sluice.frozen import Frozen


class LiveConfig(Frozen):
    # --- grouping and advantages
    group_prefix_tokens: int | None = Field(
        None,
        ge=1,
        description="Steps without a task id group by their prompt's token ids: all of them (None) or the "
        "first N.",
    )
    group_wait_s: float = Field(
        20.0,
        ge=0,
        description="A group trains at trainer.group_size members or once its first waited this long.",
    )
    baseline_decay: float = Field(
        0.9, ge=0, lt=1, description="Running per-task reward baseline (for one-member groups): EMA decay."
    )
    # --- when an update runs
    update_samples: int = Field(16, ge=1, description="An update starts once this many samples are ready...")
    update_wait_s: float = Field(
        5.0, ge=0, description="...or once the oldest ready sample waited this long."
    )
    max_update_samples: int = Field(64, ge=1, description="At most this many samples per update.")
    ppo_minibatches: int = Field(
        1,
        ge=1,
        description="Optimizer steps per update; above 1 the proximal policy differs from the current.",
    )
    behaviour_weight_cap: float = Field(
        5.0,
        gt=1,
        description="Cap of the behaviour importance weight pi_prox / pi_behaviour (decoupled PPO).",
    )
    # --- learning scopes
    default_scope: LearningScope = Field(
        "own",
        description="What a tenant's consented traffic trains when trainer.live.scopes does not name it: "
        "own (its own version line, served to it alone), shared (the pooled line), none (nothing).",
    )
    scopes: dict[str, LearningScope] = Field(
        default_factory=dict, description="Tenant -> own | shared | none, overriding default_scope."
    )
    untrained: Literal["shared", "base"] = Field(
        "shared",
        description="What a tenant whose scope is none is served: the pooled line's promoted version, or the "
        "base. A tenant with its own line is never served the pooled one.",
    )
    # --- model
    lora_rank: int = Field(0, ge=0, description="0: full fine-tune; r > 0: LoRA of rank r (peft).")
    lora_alpha: float = Field(16.0, gt=0)
    lora_targets: list[str] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"],
        description="Module names LoRA adapts.",
    )
    # --- weight push
    push_weights: bool = Field(
        True, description="Publish new versions to trainer.policy_servers (off: train without serving)."
    )
    push_every: int = Field(1, ge=1, description="Publish every k-th update.")
    push_transport: Literal["auto", "file", "bytes"] = Field(
        "auto",
        description="file: write safetensors under output_dir and send its path (same machine); bytes: send "
        "them in the request body; auto: file for loopback servers, else bytes.",
    )
    push_timeout_s: float = Field(120.0, gt=0)
    keep_push_files: int = Field(2, ge=1, description="file transport: newest pushed files kept on disk.")

    @property
    def has_own_scopes(self) -> bool:
        """Whether some tenant trains its own line (then no version is pushed as every server's default)."""
        return self.default_scope == "own" or "own" in self.scopes.values()

    def scope_of(self, tenant: str) -> str | None:
        """The learning scope a tenant's rows train: its own name, the shared scope, or None."""
        choice = self.scopes.get(tenant, self.default_scope)
        if choice == "none":
            return None
        return SHARED_SCOPE if choice == "shared" else tenant

    @model_validator(mode="after")
    def _sizes(self) -> LiveConfig:
        if self.max_update_samples < self.update_samples:
            raise ValueError("max_update_samples must be >= update_samples")
        return self
