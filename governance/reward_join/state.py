"""The join state of one trajectory: what arrived so far, what was emitted, what is still awaited.

Small by design (ids, times, rewards, eligibility facts): step bodies are stored apart, one record per
step, so appending a step never rewrites the others (linear, not quadratic, in changelog bytes). Times
named ``*_at`` of type float are the worker's processing clock (epoch seconds, passed in by the caller);
datetimes are event times from the events themselves.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from governance.eligibility import TrajectoryFacts
from sluice.events import Reward


class JoinState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    trajectory_id: str
    tenant: str = ""
    tenant_confirmed: bool = Field(
        False, description="A step or end fixed the owner; before that, rewards set it provisionally."
    )
    foreign_rewards_discarded: int = Field(
        0, description="Early rewards discarded because the steps came from another tenant."
    )
    session_id: str | None = None
    first_seen_at: float = Field(description="Processing time of the first event of any kind.")
    last_activity_at: float = Field(
        description="Processing time of the last new step (idle end counts from it)."
    )
    step_ids: list[str] = Field(default_factory=list, description="Event ids of the steps, arrival order.")
    first_step_at: datetime | None = None
    last_step_at: datetime | None = None
    end_event_id: str | None = None
    end_seen_at: float | None = None
    ended_at: datetime | None = Field(None, description="Event time of the end event.")
    outcome: str | None = None
    rewards: list[Reward] = Field(default_factory=list, description="From reward events (redacted).")
    reward_ids: list[str] = Field(default_factory=list, description="Every reward id seen (dedupe).")
    reward_names: list[str] = Field(
        default_factory=list, description="Names of every reward seen, feedback included."
    )
    value_rewards: int = Field(0, description="Rewards seen that carry a value.")
    facts: TrajectoryFacts = Field(default_factory=TrajectoryFacts)
    drop_reasons: list[str] = Field(
        default_factory=list, description="Eligibility said drop: no content is stored any more."
    )
    emitted_version: int = 0
    emitted_at: float | None = None
    retain_until: float | None = Field(
        None, description="Retention deadline of the last emission: the state never outlives it."
    )
    dirty: bool = Field(False, description="Changed since the last emission (or never emitted).")
    sent_steps: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="Per output topic (audited, train): step event id -> digest of the step record it holds.",
    )
    erased_until: float | None = Field(
        None, description="Set on an erased trajectory's marker: every event of it is dropped until then."
    )

    @property
    def erased(self) -> bool:
        return self.erased_until is not None

    @property
    def dropped(self) -> bool:
        return bool(self.drop_reasons)

    @property
    def stored_step_ids(self) -> list[str]:
        """Steps whose (redacted) bodies are in the step store: all of them, none once dropped."""
        return [] if self.drop_reasons else self.step_ids

    @property
    def has_steps(self) -> bool:
        return bool(self.step_ids)

    @classmethod
    def erased_marker(cls, trajectory_id: str, tenant: str, now: float, keep_s: float) -> JoinState:
        """What is left of an erased trajectory: its id and owner, nothing else, for ``keep_s``."""
        return cls(
            trajectory_id=trajectory_id,
            tenant=tenant,
            tenant_confirmed=True,
            first_seen_at=now,
            last_activity_at=now,
            erased_until=now + keep_s,
        )

    @classmethod
    def new(cls, trajectory_id: str, tenant: str, now: float) -> JoinState:
        return cls(trajectory_id=trajectory_id, tenant=tenant, first_seen_at=now, last_activity_at=now)
