"""Config of the async GRPO trainer and of the local CPU model server (one frozen model each).

Dependent values are derived, not asked for: the Ray temp dir comes from the project's var/ dir (or a short
/tmp path when that would overflow Ray's socket-path limit); the reference model exists only when
``kl_coef > 0``; rollout batch size follows ``tasks_per_step``. Cross-field rules live in validators so a
bad file fails before Ray starts.

    sluice config check infra/sluice.yaml
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from pipeline.learn.tasks.registry import TASKS
from sluice.frozen import Frozen
from trainers.devices import DeviceChoice
from trainers.live.config import LiveConfig
from trainers.rewards.config import ExactMatchSpec, RewardSpec

TINY_MODEL_NAME = "sluice-tiny"


class TinyModelConfig(Frozen):
    """Shape of the locally built Qwen2-config model (~2.4M parameters with the defaults)."""

    hidden_size: int = Field(192, ge=16)
    num_layers: int = Field(4, ge=1)
    num_heads: int = Field(6, ge=1)
    num_kv_heads: int = Field(2, ge=1)
    intermediate_size: int = Field(768, ge=16)
    max_positions: int = Field(8192, ge=64, description="Context length (RoPE: no extra parameters).")
    seed: int = 0

    @model_validator(mode="after")
    def _heads(self) -> TinyModelConfig:
        if self.hidden_size % self.num_heads:
            raise ValueError("hidden_size must be a multiple of num_heads")
        if self.num_heads % self.num_kv_heads:
            raise ValueError("num_heads must be a multiple of num_kv_heads")
        return self


class TaskConfig(Frozen):
    """What a trajectory is a task of, and the grader the task owns (trainer and replay checks call it)."""

    kind: Literal["traffic", "reverse_digits", "learn"] = Field(
        "traffic",
        description="traffic: any chat trajectory, reference answer from hidden_state[reference_key]; "
        "reverse_digits: the toy task 'reverse 123' -> '321' (reference derived from the prompt); "
        "learn: a verifiable task of the learning loop (learn_task), graded by its own checker with the "
        "answer read back from the prompt (reward is not used).",
    )
    learn_task: str | None = Field(None, description="learn: the task's name (pipeline.learn.tasks).")
    reference_key: str = Field("reference", description="traffic: hidden_state key holding the reference.")
    min_digits: int = Field(1, ge=1, le=12)
    max_digits: int = Field(3, ge=1, le=12)
    reward: RewardSpec = Field(default_factory=ExactMatchSpec)

    @model_validator(mode="after")
    def _digits(self) -> TaskConfig:
        if self.min_digits > self.max_digits:
            raise ValueError("min_digits must be <= max_digits")
        if (self.kind == "learn") != (self.learn_task is not None):
            raise ValueError("learn_task names the task of kind learn, and only of it")
        if self.learn_task is not None and self.learn_task not in TASKS:
            raise ValueError(f"unknown learn_task {self.learn_task!r}; known: {sorted(TASKS)}")
        return self


class ServeConfig(Frozen):
    """`sluice serve-model`: the local model as an OpenAI-compatible server."""

    host: str = "127.0.0.1"
    port: int = Field(8788, ge=0, le=65535)
    model_name: str = TINY_MODEL_NAME
    checkpoint: Path | None = Field(
        None, description="HF checkpoint dir; None: latest trainer checkpoint, else seed."
    )
    max_batch: int = Field(32, ge=1, description="Concurrent requests decoded together.")
    device: DeviceChoice = Field("auto", description="auto: CUDA when a GPU is visible, else the CPU.")
    default_max_tokens: int = Field(64, ge=1)
    max_tokens_limit: int = Field(512, ge=1)
    keep_versions: int = Field(
        3,
        ge=1,
        description="Former defaults kept in memory for rollback (the default included), besides the base "
        "loaded at start, which is never evicted (the rollback of last resort).",
    )
    max_versions: int = Field(
        8, ge=1, description="Versions in memory at most (default, kept, candidates); a push beyond is a 409."
    )
    base_version: str = Field("0", min_length=1, description="Version name of the weights loaded at start.")
    events_log: Path | None = Field(
        Path("var/serve/policy_events.jsonl"), description="JSONL log of every version served (None: no log)."
    )
    publish_events: bool = Field(False, description="Also publish policy events to the policy-events topic.")
    max_push_mb: int = Field(2048, ge=1, description="Largest weight push accepted in a request body.")
    keep_alive_s: int = Field(
        65,
        ge=1,
        description="Idle seconds a client's connection is kept open; above its clients' own idle expiry "
        "(the proxy's pool keeps 30 s, httpx 5 s), so the server never closes one a client is about to reuse.",
    )

    @model_validator(mode="after")
    def _versions(self) -> ServeConfig:
        if self.max_versions < self.keep_versions:
            raise ValueError("max_versions must be >= keep_versions")
        return self


class TrainerConfig(Frozen):
    """Async GRPO on Ray: feeder -> rollout workers -> learner, weights synced after every update."""

    enabled: bool = False
    mode: Literal["auto", "live", "resample"] = Field(
        "auto",
        description="live: the traffic on the train topic is the rollout (trainer.live); resample: rollout "
        "workers re-sample each prompt and the task's grader scores them; auto: live for the traffic task.",
    )
    live: LiveConfig = Field(default_factory=LiveConfig)
    backend: Literal["auto", "vllm", "hf"] = Field("auto", description="auto: vllm when importable and CUDA.")
    device: DeviceChoice = Field(
        "auto", description="Learner and hf-rollout device. auto: CUDA when a GPU is visible, else the CPU."
    )
    ray_address: str | None = Field(None, description="Existing Ray cluster; None starts a local one.")
    ray_temp_dir: Path | None = Field(None, description="Default: var/ray, or /tmp/sluice-ray-* if too long.")
    ray_auth_mode: Literal["token", "disabled"] = Field(
        "token", description="token: a per-run token held in the environment only (never ~/.ray)."
    )
    num_cpus: int = Field(2, ge=1, description="CPUs of the local Ray (ignored with ray_address).")
    num_gpus: int | None = Field(None, ge=0)

    model: str = Field(TINY_MODEL_NAME, description="'sluice-tiny' (built locally) or a HF model directory.")
    tiny: TinyModelConfig = Field(default_factory=TinyModelConfig)
    models: list[str] = Field(
        default_factory=lambda: [f"{TINY_MODEL_NAME}*"],
        description="request_model globs a trajectory must match; others are skipped as 'unknown model'.",
    )
    task: TaskConfig = Field(default_factory=TaskConfig)

    # --- GRPO
    group_size: int = Field(8, ge=2, description="Completions per task (the logged sample may be one).")
    tasks_per_step: int = Field(16, ge=1, description="Groups per learner update.")
    include_logged: bool = Field(True, description="The logged traffic completion joins its group.")
    max_new_tokens: int = Field(16, ge=1)
    temperature: float = Field(1.0, gt=0)
    learning_rate: float = Field(1e-3, gt=0)
    weight_decay: float = Field(0.0, ge=0)
    max_grad_norm: float = Field(1.0, gt=0)
    clip_low: float = Field(0.2, gt=0, lt=1, description="PPO clip: ratio >= 1 - clip_low.")
    clip_high: float = Field(0.28, gt=0, description="PPO clip: ratio <= 1 + clip_high (DAPO clip-higher).")
    mask_low: float = Field(0.5, gt=0, lt=1, description="Tokens with ratio < mask_low are masked (IcePop).")
    mask_high: float = Field(2.0, gt=1, description="Tokens with ratio > mask_high are masked (IcePop).")
    kl_coef: float = Field(
        0.0, ge=0,
        description="KL to the initial policy; 0 builds no reference model. Live mode: LoRA only, the "
        "reference being the base with the adapter off.",
    )  # fmt: skip
    max_update_kl: float | None = Field(
        0.05,
        gt=0,
        description="Most KL(old || new) per trained token one update may cause; larger steps are halved "
        "(up to 4 times) or undone. None: unbounded.",
    )
    max_staleness: int = Field(1, ge=0, description="Policy versions a sample may lag the learner.")
    stale_policy: Literal["drop", "downweight"] = "drop"
    stale_decay: float = Field(0.5, gt=0, le=1, description="downweight: weight = decay ** (lag - max).")
    loss_agg: Literal["token_mean", "seq_mean"] = "token_mean"
    scale_rewards: bool = Field(True, description="Divide advantages by the group std (Dr. GRPO: false).")
    micro_batch_size: int = Field(
        128, ge=1, description="Samples per forward/backward (gradients accumulate)."
    )

    # --- loop
    rollout_workers: int = Field(1, ge=1)
    max_steps: int | None = Field(None, ge=1)
    checkpoint_every: int = Field(50, ge=1)
    keep_checkpoints: int = Field(3, ge=1)
    output_dir: Path = Path("var/trainer")
    consumer_group: str = "sluice-trainer"
    poll_timeout_s: float = Field(1.0, gt=0)
    idle_timeout_s: float | None = Field(None, gt=0, description="Stop after this long without new tasks.")
    reward_timeout_s: float = Field(10.0, gt=0, description="A reward call slower than this is a failure.")
    seed: int = 0
    progress: bool = Field(True, description="rich progress bar (metrics always go to metrics.jsonl).")

    serve: ServeConfig = Field(default_factory=ServeConfig)
    policy_servers: list[str] = Field(
        default_factory=list,
        description="Root URLs of the policy servers that take weight pushes; empty: the local serve-model.",
    )

    promotion: Literal["gated", "direct"] = Field(
        "gated",
        description="gated: each trained version is a candidate that serves no live request until the control "
        "plane's gates promote it (its weights proposal and lineage go to the ledger); direct: every version "
        "serves at once (experiments; the ledger records it as ungated).",
    )

    def policy_server_urls(self) -> list[str]:
        """Every policy server to push to, roll back and report on (the local serve-model by default)."""
        return list(self.policy_servers) or [f"http://{self.serve.host}:{self.serve.port}"]

    @model_validator(mode="after")
    def _cross_checks(self) -> TrainerConfig:
        if self.mask_low > 1 - self.clip_low:
            raise ValueError("mask_low must be <= 1 - clip_low (masking is for ratios beyond the clip range)")
        if self.mask_high < 1 + self.clip_high:
            raise ValueError(
                "mask_high must be >= 1 + clip_high (masking is for ratios beyond the clip range)"
            )
        if self.resolved_mode == "live" and self.kl_coef > 0 and self.live.lora_rank == 0:
            raise ValueError(
                "kl_coef > 0 in live mode needs live.lora_rank > 0: the reference is the base model with "
                "the adapter off (a full fine-tune would need a second copy of the model)"
            )
        if self.resolved_mode == "resample" and self.include_logged and self.group_size < 3:
            raise ValueError("include_logged needs group_size >= 3 (two fresh samples plus the logged one)")
        if self.ray_address is None and self.num_cpus < self.rollout_workers + 1:
            raise ValueError(
                f"num_cpus={self.num_cpus} cannot hold {self.rollout_workers} rollout workers + 1 learner"
            )
        return self

    @property
    def resolved_mode(self) -> Literal["live", "resample"]:
        """The mode in effect: ``auto`` is live for proxied traffic, resample for tasks with their own prompts."""
        if self.mode != "auto":
            return self.mode
        return "live" if self.task.kind == "traffic" else "resample"

    @property
    def fresh_per_group(self) -> int:
        """Fresh rollouts per task: the group minus the logged member when it joins."""
        return self.group_size - 1 if self.include_logged else self.group_size
