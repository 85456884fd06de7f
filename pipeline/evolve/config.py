"""Config of ``sluice evolve propose``: diagnosis thresholds and which proposers draft candidates.

``ProposeConfig`` nests as a section of the control plane's config (``evolve.propose``):

    evolve:
      propose:
        diagnosis: {min_trajectories: 5, alpha: 0.05, window_hours: 168}
        proposers:
          enabled: [tool_format, missing_fact, model]
          model: {base_url: "http://127.0.0.1:8000/v1", model: "SmolLM2-135M-Instruct"}
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr, model_validator

from governance.evolve.diagnosis_config import DiagnosisConfig
from pipeline.evolve.http_calls import CallPolicy
from sluice.frozen import Frozen

ProposerName = Literal["tool_format", "missing_fact", "model"]


class ModelProposerConfig(Frozen):
    """An OpenAI-compatible backend that drafts memory entries and harness items from a cluster's evidence."""

    base_url: str = Field(description="OpenAI base URL, e.g. http://127.0.0.1:8000/v1 (the served model).")
    model: str = Field(min_length=1)
    api_key: SecretStr | None = Field(None, description="Sent as a bearer token; never logged.")
    timeout_s: float = Field(120.0, gt=0)
    max_tokens: int = Field(96, ge=8, le=2048)
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_chars: int = Field(400, ge=20, le=4000, description="Longest draft accepted.")
    http: CallPolicy = Field(default_factory=CallPolicy, description="Connection keep-alive and retries.")


class ProposersConfig(Frozen):
    enabled: list[ProposerName] = Field(
        default_factory=lambda: ["tool_format", "missing_fact"],
        description="Proposers asked for every cluster, in this order; each drafts at most one proposal.",
    )
    model: ModelProposerConfig | None = Field(None, description="Required when 'model' is enabled.")

    @model_validator(mode="after")
    def _model_configured(self) -> ProposersConfig:
        if "model" in self.enabled and self.model is None:
            raise ValueError("proposers.enabled names 'model' but proposers.model is not set")
        return self


class ProposeConfig(Frozen):
    diagnosis: DiagnosisConfig = Field(default_factory=DiagnosisConfig)
    proposers: ProposersConfig = Field(default_factory=ProposersConfig)
