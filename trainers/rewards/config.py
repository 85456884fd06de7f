"""YAML specs of the reward functions: one pydantic model per kind, a discriminated union on ``kind``.

Kept free of torch so that ``app.config`` can import it cheaply. ``trainers.rewards.registry.build_reward``
turns a spec into a callable ``RewardFunction``.

    trainer:
      task:
        reward:
          kind: weighted
          parts:
            - {weight: 1.0, reward: {kind: exact_match}}
            - {weight: 0.5, reward: {kind: logged}}
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator

from sluice.frozen import Frozen


class ExactMatchSpec(Frozen):
    """1.0 when the completion equals the task's reference answer, else 0.0."""

    kind: Literal["exact_match"] = "exact_match"
    strip: bool = Field(True, description="Ignore leading/trailing whitespace.")
    case_sensitive: bool = True


class CharMatchSpec(Frozen):
    """Partial credit: fraction of reference positions the completion gets right (length mismatch counts)."""

    kind: Literal["char_match"] = "char_match"
    strip: bool = True


class RegexSpec(Frozen):
    """1.0 when the pattern matches the completion (``full``: the whole completion), else 0.0."""

    kind: Literal["regex"] = "regex"
    pattern: str
    full: bool = False

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, v: str) -> str:
        try:
            re.compile(v)
        except re.error as err:
            raise ValueError(f"not a valid regular expression: {err}") from None
        return v


class NumericSpec(Frozen):
    """1.0 when the last number in the completion equals the reference number within ``tolerance``."""

    kind: Literal["numeric"] = "numeric"
    tolerance: float = Field(1e-6, ge=0)
    relative: bool = Field(False, description="Tolerance relative to |reference|.")


class UnitTestsSpec(Frozen):
    """Runs the completion (Python source) followed by tests in a subprocess; 1.0 when it exits 0.

    The tests come from ``tests`` or, when unset, from the task's reference.
    """

    kind: Literal["unit_tests"] = "unit_tests"
    tests: str | None = None
    timeout_s: float = Field(5.0, gt=0, le=600)
    python: str | None = Field(None, description="Interpreter; default: the trainer's own.")


class LoggedSpec(Frozen):
    """The reward logged with the traffic (Trajectory.reward). Applies to the logged sample only."""

    kind: Literal["logged"] = "logged"


class WeightedPart(Frozen):
    weight: float = Field(1.0, ge=0)
    reward: RewardSpec


class WeightedSpec(Frozen):
    """sum(w_i * r_i) / sum(w_i) over the parts that apply to a sample (``logged`` applies to one)."""

    kind: Literal["weighted"] = "weighted"
    parts: list[WeightedPart] = Field(min_length=1)

    @field_validator("parts")
    @classmethod
    def _some_weight(cls, v: list[WeightedPart]) -> list[WeightedPart]:
        if sum(p.weight for p in v) <= 0:
            raise ValueError("at least one part needs a positive weight")
        return v


RewardSpec = Annotated[
    ExactMatchSpec | CharMatchSpec | RegexSpec | NumericSpec | UnitTestsSpec | LoggedSpec | WeightedSpec,
    Field(discriminator="kind"),
]
WeightedPart.model_rebuild()
WeightedSpec.model_rebuild()
