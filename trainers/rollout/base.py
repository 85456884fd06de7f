"""The rollout-backend plug point: sample n completions per prompt with their sampling-time logprobs,
finish reasons and the policy version that produced them; load new weights from the learner.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping

import torch
from pydantic import BaseModel, ConfigDict, Field


class SamplingSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    n: int = Field(1, ge=1)
    max_tokens: int = Field(16, ge=1)
    temperature: float = Field(1.0, ge=0)
    seed: int | None = None


class Completion(BaseModel):
    model_config = ConfigDict(frozen=True)

    token_ids: list[int]
    logprobs: list[float] = Field(description="log p of each token under the distribution it was drawn from.")
    finish_reason: str = Field(description="'stop' (stop token) or 'length'.")
    text: str
    policy_version: int


class RolloutBackend(ABC):
    """One engine holding one copy of the policy."""

    name: str = "backend"

    @property
    @abstractmethod
    def policy_version(self) -> int:
        """Version of the weights currently loaded (-1 before the first load)."""

    @abstractmethod
    def generate(self, prompts: list[list[int]], spec: SamplingSpec) -> list[list[Completion]]:
        """``spec.n`` completions for each prompt (token ids), in prompt order."""

    @abstractmethod
    def load_weights(self, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        """Replace the policy's weights; later generations report ``version``."""
