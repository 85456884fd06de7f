"""A trajectory and what makes one: the end and reward events it is assembled from, its versions (a header
with its steps inline, layout 1.0, or by reference, layout 2.0), and the step records of layout 2.0 whose
step bytes are spliced in as they came (``encode_step_record``, ``step_bytes_of``).

    pytest tests/governance/reward_join/test_step_refs.py
"""

from __future__ import annotations

from datetime import datetime
from json.encoder import encode_basestring_ascii as _json_string
from typing import Literal

from pydantic import Field

from sluice.events.base import REFS_SCHEMA_VERSION, _Event, utcnow
from sluice.events.governance_fields import Governance
from sluice.events.step import Reward, StepEvent
from sluice.step_refs import StepsRef, step_digest


class TrajectoryEndEvent(_Event):
    """The agent (or harness) declares the trajectory finished: published on the steps topic."""

    event_type: Literal["end"] = "end"
    step_count: int | None = None
    outcome: str | None = None
    governance: Governance = Field(default_factory=Governance)


class RewardEvent(_Event):
    """A reward or feedback signal, possibly days after the trajectory: the rewards topic."""

    event_type: Literal["reward"] = "reward"
    reward: Reward


def trajectory_version_id(trajectory_id: str, version: int) -> str:
    """Identity of one trajectory version: the ``event_id`` of that version's ``Trajectory``."""
    return f"{trajectory_id}:v{version}"


class TrajectoryStep(_Event):
    """One assembled step of a trajectory (layout 2.0), sent once per topic before the first header that
    references it (again only when its assembled content changed: a late step reward, a tool answer).
    ``event_id`` is the step's event id; ``version`` the trajectory version it was sent with."""

    schema_version: str = REFS_SCHEMA_VERSION
    event_type: Literal["trajectory_step"] = "trajectory_step"
    version: int = Field(ge=1)
    digest: str
    step: StepEvent


def record_time() -> str:
    """The ``created_at`` of records made now, as pydantic writes a UTC datetime (``...Z``)."""
    return utcnow().isoformat().replace("+00:00", "Z")


def encode_step_record(
    trajectory_id: str,
    tenant: str,
    version: int,
    step_event_id: str,
    body: bytes,
    digest: str | None = None,
    created_at: str | None = None,
) -> bytes:
    """A ``TrajectoryStep`` record around a step's bytes, which are spliced in as they are (never encoded
    again): the record's own fields first, ``step`` last (``step_bytes_of`` cuts it back out). ``digest``:
    ``step_digest(body)`` when the caller has it already; ``created_at``: ``record_time()`` when the caller
    makes several records at once (default: now). The fields are written as ``json.dumps`` writes them
    (compact, ASCII-escaped by the same C escaper), without building a dict per record."""
    head = (
        f'{{"schema_version":{_json_string(REFS_SCHEMA_VERSION)},"event_id":{_json_string(step_event_id)},'
        f'"trajectory_id":{_json_string(trajectory_id)},"tenant":{_json_string(tenant)},'
        f'"created_at":{_json_string(created_at or record_time())},"event_type":"trajectory_step",'
        f'"version":{int(version)},"digest":{_json_string(digest or step_digest(body))},"step":'
    )
    return head.encode() + body + b"}"


def step_bytes_of(value: bytes) -> bytes | None:
    """The step's bytes of a record ``encode_step_record`` wrote (None: not such a record)."""
    at = value.find(b',"step":')
    return value[at + 8 : -1] if at >= 0 and value.endswith(b"}") else None


class Trajectory(_Event):
    """An assembled, governed trajectory. ``version`` grows when late rewards arrive; never edited in place.

    ``event_id`` is ``trajectory_version_id(trajectory_id, version)``, so re-emitting the same version is
    idempotent.
    """

    event_type: Literal["trajectory"] = "trajectory"
    version: int = Field(1, ge=1)
    session_id: str | None = None
    steps: list[StepEvent] = Field(default_factory=list)
    rewards: list[Reward] = Field(default_factory=list)
    reward: float | None = Field(None, description="Trajectory-level reward after the configured combine.")
    status: Literal["ended", "timed_out"] = "ended"
    rewarded: bool = False
    first_step_at: datetime | None = None
    ended_at: datetime | None = None
    emitted_at: datetime = Field(default_factory=utcnow)
    governance: Governance = Field(default_factory=Governance)
    train_blockers: list[str] | None = Field(
        None,
        description="Why this version may not be trained on, as the join stage decided ([]: it may, and "
        "went to the train topic); None: undecided (a record from before the stage carried its decision).",
    )
    steps_ref: StepsRef | None = Field(
        None,
        description="Layout 2.0: the steps by reference (they travel as TrajectoryStep records before this "
        "header, on its topic and partition); None: layout 1.0, the steps are inline in ``steps``.",
    )

    @property
    def by_reference(self) -> bool:
        return self.steps_ref is not None
