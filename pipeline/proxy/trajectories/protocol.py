"""Trajectory API: the request models (strict: an unknown field is a 400, typos must not lose a reward)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sluice.events import FeedbackKind

_TEXT = 20_000


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RewardRequest(_Strict):
    value: float | None = Field(
        None, allow_inf_nan=False, description="The reward; required unless kind=critique."
    )
    name: str = Field("reward", min_length=1, max_length=128)
    kind: Literal["scalar", "binary", "critique"] = "scalar"
    step: int | None = Field(
        None, ge=0, description="Step the reward belongs to; omitted = the whole trajectory."
    )
    source: str = Field("api", min_length=1, max_length=128)
    critique: str | None = Field(None, max_length=_TEXT)
    comment: str | None = Field(None, max_length=_TEXT, description="Same as critique.")
    id: str | None = Field(
        None, min_length=1, max_length=128, description="Idempotency key: retries share it."
    )

    @model_validator(mode="after")
    def _consistent(self) -> RewardRequest:
        if self.critique is not None and self.comment is not None:
            raise ValueError("give critique or comment, not both")
        text = self.critique if self.critique is not None else self.comment
        if self.kind == "critique":
            if not text:
                raise ValueError("kind=critique needs a critique (or comment) text")
        elif self.value is None:
            raise ValueError(f"kind={self.kind} needs a numeric value")
        if self.kind == "binary" and self.value not in (0.0, 1.0):
            raise ValueError("kind=binary needs value 0 or 1")
        return self

    @property
    def text(self) -> str | None:
        return self.critique if self.critique is not None else self.comment


class FeedbackRequest(_Strict):
    kind: FeedbackKind
    step: int | None = Field(None, ge=0)
    detail: str | None = Field(None, max_length=_TEXT)
    source: str = Field("user", min_length=1, max_length=128)
    id: str | None = Field(
        None, min_length=1, max_length=128, description="Idempotency key: retries share it."
    )


class EndRequest(_Strict):
    outcome: str | None = Field(None, max_length=1024)
    step_count: int | None = Field(None, ge=0)
