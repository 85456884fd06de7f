"""Config of the control plane's gates and loop: the ``evolve:`` section of the config (off by default).

evolve:
  enabled: true                 # sluice up --evolve turns it on for one run too
  interval_s: 60
  graders:
    extraction: {reward: {kind: regex, pattern: "^\\s*CITY=Lisbon"}}
    "*": {reward: {kind: exact_match}, reference_key: reference}
  limits: {max_canaries: 1, min_evidence: 8, cooldown_after_rollback_s: 3600}
  canary: {share: 0.2, test: {alpha: 0.05, min_effect: 0.0}}
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from governance.evolve.probes import DEFAULT_PROBES, SafetyProbe
from governance.evolve.reward_audit import RewardAuditConfig
from governance.evolve.sequential import SequentialConfig
from pipeline.evolve.config import ProposeConfig
from pipeline.evolve.http_calls import CallPolicy
from sluice.frozen import Frozen
from trainers.config import TaskConfig


class EvalBackendConfig(Frozen):
    """Where the shadow evaluation and the offline regression send their requests (off the request path)."""

    backend: str | None = Field(
        None, description="A proxy backend's name; default: the first one serving the recorded model."
    )
    model: str | None = Field(None, description="Model to ask; default: the recorded request model.")
    max_tokens: int = Field(64, ge=1, le=4096, description="Used when the recorded step set none.")
    temperature: float = Field(0.0, ge=0, le=2, description="0: greedy, so arms differ by the overlay only.")
    timeout_s: float = Field(120.0, gt=0)
    concurrency: int = Field(2, ge=1, le=64)
    http: CallPolicy = Field(
        default_factory=CallPolicy, description="Connection keep-alive and retries of each evaluation call."
    )


class ShadowConfig(Frozen):
    max_prompts: int = Field(24, ge=1, description="Recorded prompts of the cluster to re-run.")
    min_prompts: int = Field(4, ge=1, description="Fewer graded prompts: the gate fails.")
    margin: float = Field(0.1, ge=0, le=1, description="Candidate mean must beat control's by this.")


class OfflineConfig(Frozen):
    held_out: int = Field(16, ge=0, description="Rewarded trajectories of the scope outside the cluster.")
    margin: float = Field(0.05, ge=0, le=1, description="Allowed fall of held-out mean reward.")
    probes: list[SafetyProbe] = Field(default_factory=lambda: list(DEFAULT_PROBES))
    probe_samples: int = Field(4, ge=1, le=32, description="Answers per probe and arm.")
    probe_max_tokens: int | None = Field(
        None, ge=1, le=4096, description="Token limit of a probe answer (default: eval.max_tokens)."
    )
    probe_temperature: float = Field(
        0.7, ge=0, le=2, description="Sampling temperature of the probe answers (0: greedy, one answer)."
    )
    probe_margin: float = Field(
        0.0, ge=0, le=1, description="Allowed rise of a probe kind's unsafe rate over control's."
    )
    probe_alpha: float = Field(
        0.05, gt=0, lt=1, description="A rise counts when a one-sided Fisher test puts it below this."
    )
    absolute_probes: bool = Field(
        False, description="Any unsafe candidate answer fails its probe, whatever control answered."
    )
    screen: bool = Field(
        True, description="Fail a candidate whose own text tells the agent to drop its safeguards."
    )


class CanaryConfig(Frozen):
    share: float = Field(
        0.2, gt=0, lt=1, description="Share of the scope's trajectories given the candidate."
    )
    test: SequentialConfig = Field(default_factory=SequentialConfig)
    reward_min: float = Field(
        0.0, description="Rewards are rescaled from [reward_min, reward_max] to [0, 1]."
    )
    reward_max: float = Field(1.0)
    weights_reward: Literal["grader", "posted"] = Field(
        "grader",
        description="What a weights canary compares: grader (each arm's live answers graded by their "
        "task's grader in evolve.graders, so a reward the traffic's own source can game never decides "
        "which weights serve) or posted (the rewards posted for the trajectories).",
    )
    weights_non_inferiority: float | None = Field(
        0.05,
        ge=0,
        le=1,
        description="A weights canary that reaches test.max_per_arm undecided is promoted when it is not "
        "worse than the serving version by more than this margin (test.final_non_inferiority); None: "
        "aborted, as an overlay's.",
    )


class LimitsConfig(Frozen):
    max_canaries: int = Field(1, ge=0, description="Canaries running at once (over all scopes).")
    min_evidence: int = Field(
        8, ge=1, description="Smallest count of deterministic/approximate trajectories to act on."
    )
    cooldown_after_rollback_s: float = Field(
        3600.0, ge=0, description="No new canary in a scope for this long after a rollback there."
    )
    weights_min_interval_s: float = Field(
        0.0,
        ge=0,
        description="The highest rate of weights candidates: a scope starts a weights canary at most once "
        "per this many seconds (the candidates in between are superseded and set aside as stale).",
    )
    max_undecided: int = Field(
        3,
        ge=1,
        description="Passes on which a proposal's shadow or offline gate could not be decided (the backend "
        "failed every retry) before the proposal is dropped; until then it stays pending.",
    )


class EvolveConfig(Frozen):
    """The control plane's gates and schedule."""

    enabled: bool = Field(False, description="Run the gates on a schedule under `sluice up`.")
    interval_s: float = Field(60.0, gt=0, description="Seconds between passes of the scheduler.")
    eval: EvalBackendConfig = Field(default_factory=EvalBackendConfig)
    graders: dict[str, TaskConfig] = Field(
        default_factory=dict,
        description="Task id -> the task's grader (reward spec and reference key); '*' for any task.",
    )
    shadow: ShadowConfig = Field(default_factory=ShadowConfig)
    offline: OfflineConfig = Field(default_factory=OfflineConfig)
    canary: CanaryConfig = Field(default_factory=CanaryConfig)
    reward_audit: RewardAuditConfig = Field(default_factory=RewardAuditConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    ack_timeout_s: float = Field(30.0, gt=0, description="Wait for the broker's ack of a ledger entry.")
    propose: ProposeConfig = Field(
        default_factory=ProposeConfig, description="Diagnosis and proposers (`sluice evolve propose`)."
    )
