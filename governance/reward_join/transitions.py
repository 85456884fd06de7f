"""How one event changes a trajectory's join state. Pure: the processing time is passed in.

Every function returns a ``Transition``: the new state, whether anything changed (a redelivered event
changes nothing: steps are deduplicated by event id, rewards by reward id, the end by its event id), and
what the caller must do with stored step bodies (store this one, delete all of them).

Tenancy: a trajectory belongs to the tenant of its steps. Rewards that arrive before any step name the
owner only provisionally; if the first step or end comes from another tenant, those rewards are
discarded (counted in ``foreign_rewards_discarded``). After that, any event from another tenant raises
``TenantMismatch`` (the stage dead-letters it): one tenant can never write into another's trajectory,
whichever arrives first.

Erasure: an erased trajectory's state is a marker (``JoinState.erased_marker``) holding no content;
every event of it changes nothing and stores nothing (``Transition.erased``), so a late reward, a
re-delivered record or a replay never brings it back.

Eligibility runs on every new step and end: as soon as the policy says drop, no content is stored any
more and what was stored is deleted; once a dropped trajectory was emitted, later events only mark
themselves as seen (it stays dropped).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Concatenate, ParamSpec, TypeVar

from pydantic import BaseModel, ConfigDict

from governance.config import EligibilityPolicy, RewardJoinConfig
from governance.eligibility import TrajectoryFacts, drop_reasons
from governance.reward_join.feedback import harvest_feedback, reward_value
from governance.reward_join.state import JoinState
from sluice.errors import SluiceError
from sluice.events import EligibilityDecision, RewardEvent, StepEvent, TrajectoryEndEvent
from sluice.model_update import updated


class TenantMismatch(SluiceError):
    """An event names a trajectory that belongs to another tenant."""


def _claim(state: JoinState, tenant: str) -> JoinState:
    """The state owned by ``tenant`` after one of its steps or its end arrived."""
    if state.tenant_confirmed:
        if tenant != state.tenant:
            raise TenantMismatch(f"trajectory {state.trajectory_id} belongs to another tenant")
        return state
    if tenant == state.tenant:
        return updated(state, {"tenant_confirmed": True})
    foreign = len(state.rewards)  # provisional owner's early rewards: not this tenant's to keep
    return updated(
        state,
        {
            "tenant": tenant,
            "tenant_confirmed": True,
            "rewards": [],
            "reward_names": [],
            "value_rewards": 0,
            "foreign_rewards_discarded": state.foreign_rewards_discarded + foreign,
        },
    )


class Transition(BaseModel):
    model_config = ConfigDict(frozen=True)

    state: JoinState
    changed: bool
    store_step: bool = False
    purge_steps: bool = False
    erased: bool = False


_E = TypeVar("_E", StepEvent, RewardEvent, TrajectoryEndEvent)
_P = ParamSpec("_P")


def _on_current(
    apply: Callable[Concatenate[JoinState, _E, float, _P], Transition],
) -> Callable[Concatenate[JoinState | None, _E, float, _P], Transition]:
    """``apply`` the event to the trajectory's state, or to a new one owned (provisionally) by the
    event's tenant; an erased trajectory's marker stays as it is."""

    @functools.wraps(apply)
    def on_current(
        state: JoinState | None, event: _E, now: float, *args: _P.args, **kwargs: _P.kwargs
    ) -> Transition:
        current = state or JoinState.new(event.trajectory_id, event.tenant, now)
        if current.erased:
            return Transition(state=current, changed=False, erased=True)
        return apply(current, event, now, *args, **kwargs)

    return on_current


def _names(names: list[str], more: list[str]) -> list[str]:
    return sorted(set(names) | set(more))


def _check_drop(state: JoinState, facts: TrajectoryFacts, policy: EligibilityPolicy, now: float) -> list[str]:
    if state.dropped:
        return state.drop_reasons
    return drop_reasons(facts, policy, datetime.fromtimestamp(now, tz=UTC))


def _dirty(state: JoinState) -> bool:
    """Whether a change leaves the state to emit: not once a dropped trajectory was emitted."""
    return state.dirty or not (state.dropped and state.emitted_version > 0)


def _screened(
    state: JoinState, facts: TrajectoryFacts, policy: EligibilityPolicy, now: float
) -> tuple[dict[str, Any], list[str]]:
    """The update of a step or an end that adds to the facts (the facts, the drop decision on them, the
    rewards kept, dirty), and the drop reasons."""
    drop = _check_drop(state, facts, policy, now)
    update = {
        "facts": facts,
        "drop_reasons": drop,
        "rewards": [] if drop else state.rewards,
        "dirty": _dirty(state),
    }
    return update, drop


@_on_current
def apply_step(
    state: JoinState,
    step: StepEvent,
    now: float,
    cfg: RewardJoinConfig,
    policy: EligibilityPolicy,
) -> Transition:
    if step.event_id in state.step_ids:
        return Transition(state=state, changed=False, store_step=step.event_id in state.stored_step_ids)
    state = _claim(state, step.tenant)
    screened, drop = _screened(state, state.facts.add_step(step), policy, now)
    step_rewards = [*step.rewards, *harvest_feedback(step, cfg)]
    new = updated(
        state,
        {
            "session_id": state.session_id or step.session_id,
            "last_activity_at": max(state.last_activity_at, now),
            "step_ids": [*state.step_ids, step.event_id],
            "first_step_at": min(filter(None, [state.first_step_at, step.created_at])),
            "last_step_at": max(filter(None, [state.last_step_at, step.created_at])),
            "reward_names": _names(state.reward_names, [r.name for r in step_rewards]),
            "value_rewards": state.value_rewards
            + sum(reward_value(r, cfg) is not None for r in step_rewards),
            **screened,
        },
    )
    purge = bool(drop) and not state.dropped
    return Transition(state=new, changed=True, store_step=not drop, purge_steps=purge)


@_on_current
def apply_reward(state: JoinState, event: RewardEvent, now: float, cfg: RewardJoinConfig) -> Transition:
    reward = event.reward
    if reward.reward_id in state.reward_ids:
        return Transition(state=state, changed=False)
    if event.tenant != state.tenant:
        raise TenantMismatch(
            f"reward for trajectory {event.trajectory_id} from a tenant that does not own it"
        )
    new = updated(
        state,
        {
            "rewards": state.rewards if state.dropped else [*state.rewards, reward],
            "reward_ids": [*state.reward_ids, reward.reward_id],
            "reward_names": _names(state.reward_names, [reward.name]),
            "value_rewards": state.value_rewards + int(reward_value(reward, cfg) is not None),
            "dirty": _dirty(state),
        },
    )
    return Transition(state=new, changed=True)


@_on_current
def apply_end(state: JoinState, end: TrajectoryEndEvent, now: float, policy: EligibilityPolicy) -> Transition:
    if end.event_id == state.end_event_id:
        return Transition(state=state, changed=False)
    state = _claim(state, end.tenant)
    screened, drop = _screened(state, state.facts.add_end(end), policy, now)
    new = updated(
        state,
        {
            "end_event_id": end.event_id,
            "end_seen_at": state.end_seen_at if state.end_seen_at is not None else now,
            "ended_at": end.created_at,
            "outcome": end.outcome or state.outcome,
            **screened,
        },
    )
    return Transition(state=new, changed=True, purge_steps=bool(drop) and not state.dropped)


def mark_emitted(state: JoinState, version: int, decision: EligibilityDecision, now: float) -> Transition:
    """The state once ``version`` is delivered. A version decided ``drop`` at emission (e.g. retention
    ran out while it waited for rewards) also stops keeping content: ``purge_steps`` says so."""
    deadline = decision.retention_deadline.timestamp() if decision.retention_deadline else None
    update: dict[str, object] = {
        "emitted_version": version,
        "emitted_at": now,
        "dirty": False,
        "retain_until": deadline,
    }
    purge = decision.decision == "drop" and bool(state.stored_step_ids or state.rewards)
    if decision.decision == "drop":
        update.update({"drop_reasons": state.drop_reasons or decision.reasons, "rewards": []})
    return Transition(state=state.model_copy(update=update), changed=True, purge_steps=purge)


def reopen_unstored(state: JoinState, stored_version: int) -> JoinState | None:
    """The state that emits its last version again, when the store holds only up to ``stored_version``
    (the version was sent, then lost with a broker that kept it in memory); None when nothing is missing.

    Only the newest version can be built again (the state has moved past older ones): it keeps its
    number, so the store's history has no gap at the top and no version twice."""
    if state.erased or state.emitted_version == 0 or stored_version >= state.emitted_version:
        return None
    # the step records were lost with the version: they are sent again with it
    return state.model_copy(
        update={"emitted_version": state.emitted_version - 1, "dirty": True, "sent_steps": {}}
    )
