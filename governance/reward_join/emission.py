"""When a trajectory is emitted, and when its state is looked at again. Pure: ``now`` is passed in.

Rules (processing-clock seconds; ``end`` = when the end event was seen, else last new step + idle_end_s):
- emit when the trajectory has steps, changed since its last emission, ``now >= end``, and either every
  ``required`` reward name has arrived or ``now >= end + wait_s`` (then it is emitted unrewarded);
  a dropped trajectory is emitted at ``end`` without waiting for rewards (it never trains);
- version = last emitted version + 1: a reward (or step) arriving after emission makes a new version;
  re-evaluating an unchanged state plans nothing, so emission is idempotent;
- an emitted, unchanged state expires ``keep_emitted_s`` after its last emission, or at its retention
  deadline if that comes first (state deleted);
- rewards whose trajectory never shows a step are orphans after ``orphan_ttl_s`` (dead-lettered).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from governance.config import RewardJoinConfig
from governance.reward_join.state import JoinState


class EmissionPlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    version: int
    status: Literal["ended", "timed_out"]
    rewarded: bool
    cause: Literal["rewards_complete", "wait_elapsed", "dropped"]


def end_time(state: JoinState, cfg: RewardJoinConfig) -> float | None:
    """When the trajectory ended (end event seen) or will end by idleness; None without steps."""
    if state.end_seen_at is not None:
        return state.end_seen_at
    if not state.has_steps:
        return None
    return state.last_activity_at + cfg.idle_end_s


def required_present(state: JoinState, cfg: RewardJoinConfig) -> bool:
    return set(cfg.required) <= set(state.reward_names)


def is_rewarded(state: JoinState, cfg: RewardJoinConfig) -> bool:
    """Required rewards all arrived; with none required, at least one reward with a value did."""
    return required_present(state, cfg) if cfg.required else state.value_rewards > 0


def plan_emission(state: JoinState, cfg: RewardJoinConfig, now: float) -> EmissionPlan | None:
    """The version to emit now, or None (never for an erased trajectory)."""
    if state.erased:
        return None
    end = end_time(state, cfg)
    if end is None or not state.dirty or now < end:
        return None
    status: Literal["ended", "timed_out"] = "ended" if state.end_seen_at is not None else "timed_out"
    version = state.emitted_version + 1
    if state.dropped:
        return EmissionPlan(version=version, status=status, rewarded=False, cause="dropped")
    if required_present(state, cfg):
        return EmissionPlan(
            version=version, status=status, rewarded=is_rewarded(state, cfg), cause="rewards_complete"
        )
    if now >= end + cfg.wait_s:
        return EmissionPlan(version=version, status=status, rewarded=False, cause="wait_elapsed")
    return None


def next_due_at(state: JoinState, cfg: RewardJoinConfig) -> float:
    """The next time at which ``plan_emission``, ``is_expired`` or ``is_orphaned`` may change its answer."""
    if state.erased_until is not None:
        return state.erased_until
    end = end_time(state, cfg)
    if end is None:
        return state.first_seen_at + cfg.orphan_ttl_s
    if state.dirty:
        return end if state.dropped or required_present(state, cfg) else end + cfg.wait_s
    return _expires_at(state, cfg)


def _expires_at(state: JoinState, cfg: RewardJoinConfig) -> float:
    keep = (state.emitted_at or state.first_seen_at) + cfg.keep_emitted_s
    return keep if state.retain_until is None else min(keep, state.retain_until)


def is_expired(state: JoinState, cfg: RewardJoinConfig, now: float) -> bool:
    """Emitted, unchanged since, and kept long enough (or past retention): the state can be deleted.
    An erased trajectory's marker expires after ``keep_erased_s``."""
    if state.erased_until is not None:
        return now >= state.erased_until
    return state.emitted_version > 0 and not state.dirty and now >= _expires_at(state, cfg)


def is_orphaned(state: JoinState, cfg: RewardJoinConfig, now: float) -> bool:
    """Only rewards (or an end) arrived, never a step, for longer than ``orphan_ttl_s``."""
    return not state.erased and not state.has_steps and now >= state.first_seen_at + cfg.orphan_ttl_s
