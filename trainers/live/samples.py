"""What live mode trains on: one sample per recorded model call (or per chained trajectory), taken from a trajectory as the proxy
recorded it (no re-generation), and the batch the learner receives.

Lists, not tensors, so they travel through Ray's object store cheaply and print readably.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from trainers.samples import FedItem


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LiveSample(_Model):
    """One model call of one trajectory version: its prompt and completion token ids, the behaviour
    logprobs the serving engine reported, the reward the join attached and the policy version that served it."""

    trajectory_id: str
    version: int = Field(description="Trajectory version (grows with late rewards).")
    step_index: int
    prompt_ids: list[int]
    token_ids: list[int]
    logprobs: list[float] | None = Field(None, description="Behaviour logprobs, one per completion token.")
    loss_mask: list[int] | None = Field(
        None,
        description="Per completion token: 1 where the model generated it (trained), 0 where it is context "
        "between model turns (tool results, user turns, template tokens: attended, not trained). None: all 1.",
    )
    merged_steps: int = Field(1, ge=1, description="Model calls this sample holds (a merged trajectory: >1).")
    reward: float
    policy_version: int | None = Field(
        description="Oldest policy version that served the call; None when the step names no integer version."
    )
    policy_scope: str | None = Field(
        None, description="The learning scope of the version that served it ('shared' or a tenant's own)."
    )
    recorded_version: str | None = Field(None, description="The step's model_version as recorded.")
    temperature: float = Field(1.0, gt=0, description="Sampling temperature (greedy calls count as 1.0).")
    group_key: str = Field(description="GRPO group: the task id, else the prompt prefix.")
    baseline_key: str = Field(
        description="Running baseline for one-member groups: the task id, else the harness."
    )
    retokenized: bool = Field(False, description="The backend gave no token ids: tokenized by the trainer.")
    reward_at: float | None = Field(
        None, description="Unix time the newest reward of this sample was posted."
    )
    tenant: str = Field("", description="The trajectory's tenant (lineage, learning scope).")
    reward_sources: list[str] = Field(
        default_factory=list, description="Sources of the rewards this sample's reward came from."
    )


class LiveItem(FedItem):
    """One trajectory version from the train topic, as the feeder hands it out."""

    samples: list[LiveSample]
    skipped_steps: dict[str, int] = Field(default_factory=dict, description="reason -> steps left out.")
    merge: dict[str, int] = Field(
        default_factory=dict, description="One-sequence counts (trainers.live.merge.MergeCounts)."
    )


class LiveRow(_Model):
    """A sample with its advantage and staleness weight: what the learner trains on."""

    sample: LiveSample
    advantage: float
    weight: float = 1.0
