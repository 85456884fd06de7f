"""Delayed reward joins: rewards and feedback meet their trajectory by id, whenever they arrive.

State per trajectory (``JoinState``), pure transitions per event (``transitions``), emission rules with
an injected clock (``emission``), assembly of the emitted version (``assemble``, ``governed``), reward
combination (``combine``) and feedback harvesting (``feedback``). No Kafka, no Faust: the stage adapter in
``pipeline/stages`` stores the state in changelog-backed tables and calls these.
"""

from governance.reward_join.assemble import assemble_trajectory
from governance.reward_join.combine import combine_rewards, trajectory_reward
from governance.reward_join.emission import (
    EmissionPlan,
    is_expired,
    is_orphaned,
    next_due_at,
    plan_emission,
)
from governance.reward_join.governed import Emission, build_emission
from governance.reward_join.state import JoinState
from governance.reward_join.step_refs import TopicEmission, on_topic, step_payloads
from governance.reward_join.transitions import (
    Transition,
    apply_end,
    apply_reward,
    apply_step,
    mark_emitted,
    reopen_unstored,
)

__all__ = [
    "Emission",
    "EmissionPlan",
    "JoinState",
    "TopicEmission",
    "Transition",
    "apply_end",
    "apply_reward",
    "apply_step",
    "assemble_trajectory",
    "build_emission",
    "combine_rewards",
    "is_expired",
    "is_orphaned",
    "mark_emitted",
    "next_due_at",
    "on_topic",
    "plan_emission",
    "reopen_unstored",
    "step_payloads",
    "trajectory_reward",
]
