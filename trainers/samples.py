"""What flows between the trainer's actors: tasks from the feeder, scored groups from the rollout workers.

Shapes are lists, not tensors, so they travel through Ray's object store cheaply and print readably.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sluice.events import trajectory_version_id


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LoggedCompletion(_Model):
    """The completion the traffic actually produced; joins its group as an off-policy member."""

    text: str
    token_ids: list[int]
    logprobs: list[float] | None = Field(
        None, description="Behaviour logprobs when the backend recorded them."
    )


class FedItem(_Model):
    """What the feeder hands out for one trajectory version, with the train-topic record it came from."""

    trajectory_id: str
    version: int
    topic: str = ""
    partition: int = -1
    offset: int = -1

    @property
    def key(self) -> str:
        return trajectory_version_id(self.trajectory_id, self.version)


class TrainingTask(FedItem):
    """One prompt to sample a group for, built from one version of one trajectory."""

    messages: list[dict[str, Any]]
    prompt_ids: list[int]
    reference: str | None = None
    logged_reward: float | None = None
    logged: LoggedCompletion | None = None


class Sample(_Model):
    """One completion with its score. ``logprobs`` are sampling-time (behaviour) logprobs per token."""

    token_ids: list[int]
    logprobs: list[float] | None
    reward: float
    loss_mask: list[int] | None = Field(
        None, description="1 on tokens the loss trains, 0 on context tokens inside the completion; None: all."
    )
    reward_failed: bool = False
    reward_error: str | None = None
    policy_version: int = Field(-1, description="Weights it was sampled with; -1 for the logged sample.")
    finish_reason: str = "length"
    is_logged: bool = False
    text: str = ""


class Group(_Model):
    """A task and its samples: the unit of group-normalised advantages."""

    task_key: str
    prompt_ids: list[int]
    samples: list[Sample]
    policy_version: int = Field(description="Weights the fresh samples were drawn with.")
