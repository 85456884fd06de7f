"""A tenant's recorded support traffic with a planted missing fact, and the candidates that answer it.

Scope ``acme/support``: the agent's system prompt names the bot but states none of the company facts,
so questions about the promo code, the refund window and the support hours fail (reward 0) while the
bot's name is answered right (reward 1, the held-out slice). Each step records its reference answer in
``hidden_state`` as the agent exposes it, and each trajectory carries the replay grade the stages gave.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sluice.events import (
    Action,
    Choice,
    GenAIAttributes,
    Governance,
    Message,
    Observation,
    RedactionReport,
    ReplayGrade,
    Reward,
    SamplingParams,
    StepEvent,
    StepMetadata,
    Trajectory,
    utcnow,
)
from sluice.evolution import FailureCluster, HarnessItem, MemoryEntry, Overlay, Proposal, harness_item_id

TENANT, TASK = "acme", "support"
MODEL = "scripted"
SYSTEM = "You are Acme's support assistant.\nYour name is Ada.\nAnswer with the value only."
QUESTIONS = [  # (question, reference, answered right by the bare agent)
    ("What is the promo code?", "SUNNY24", False),
    ("Tell me the promo code please.", "SUNNY24", False),
    ("How long is the refund window?", "30 days", False),
    ("What refund window do you offer?", "30 days", False),
    ("What are your support hours?", "9-17 CET", False),
    ("When are the support hours?", "9-17 CET", False),
]
HELD_OUT = [("What is your name?", "Ada"), ("Please tell me your name.", "Ada")]
FACTS = ["The promo code is SUNNY24.", "The refund window is 30 days.", "Support hours are 9-17 CET."]
T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def step(
    tid: str, question: str, reference: str, reply: str, *, at: datetime, overlay_id: str | None = None,
    arm: str | None = None, error: str | None = None,
) -> StepEvent:  # fmt: skip
    return StepEvent(
        trajectory_id=tid,
        tenant=TENANT,
        step_index=0,
        created_at=at,
        observation=Observation(
            messages=[Message(role="system", content=SYSTEM), Message(role="user", content=question)]
        ),
        hidden_state={"reference": reference},
        action=Action(
            choices=[Choice(message=Message(role="assistant", content=reply), finish_reason="stop")]
        ),
        action_result={"error": error, "status_code": 500 if error else 200},
        metadata=StepMetadata(
            gen_ai=GenAIAttributes(request_model=MODEL, response_model=MODEL),
            sampling=SamplingParams(temperature=0.0, max_tokens=16),
            model_version="m1",
            task_id=TASK,
            overlay_id=overlay_id,
            overlay_arm=arm,
            started_at=at,
        ),
        governance=Governance(redaction="redacted", redaction_report=RedactionReport()),
    )


def trajectory(
    tid: str, steps: list[StepEvent], reward: float | None, grade: str, at: datetime
) -> Trajectory:
    return Trajectory(
        trajectory_id=tid,
        event_id=f"{tid}:v1",
        tenant=TENANT,
        created_at=at,
        steps=steps,
        rewards=[Reward(value=reward)] if reward is not None else [],
        reward=reward,
        rewarded=reward is not None,
        first_step_at=at,
        ended_at=at + timedelta(seconds=2),
        governance=Governance(
            redaction="redacted",
            redaction_report=RedactionReport(),
            replay=ReplayGrade(grade=grade),  # type: ignore[arg-type]
        ),
    )


def recorded_traffic() -> tuple[list[Trajectory], list[str], list[str]]:
    """(trajectories, the failing cluster's ids, ids of failing but non-replayable ones)."""
    out, cluster, unreplayable = [], [], []
    for i, (q, ref, _ok) in enumerate(QUESTIONS):
        at = T0 + timedelta(minutes=i)
        tid = f"fail-{i}"
        grade = "deterministic" if i % 2 == 0 else "approximate"
        out.append(trajectory(tid, [step(tid, q, ref, "I am not sure.", at=at)], 0.0, grade, at))
        cluster.append(tid)
    for i, (q, ref, _ok) in enumerate(QUESTIONS[:3]):
        at = T0 + timedelta(minutes=10 + i)
        tid = f"noreplay-{i}"
        out.append(trajectory(tid, [step(tid, q, ref, "I am not sure.", at=at)], 0.0, "non_replayable", at))
        unreplayable.append(tid)
    for i, (q, ref) in enumerate(HELD_OUT * 2):
        at = T0 + timedelta(minutes=20 + i)
        tid = f"ok-{i}"
        out.append(trajectory(tid, [step(tid, q, ref, ref, at=at)], 1.0, "deterministic", at))
    return out, cluster, unreplayable


def overlay(*, memory: list[str] = FACTS, add: list[str] = (), remove: list[str] = ()) -> Overlay:
    return Overlay(
        tenant=TENANT,
        task_id=TASK,
        memory=[MemoryEntry(text=t) for t in memory],
        harness_add=[HarnessItem(text=t) for t in add],
        harness_remove=[harness_item_id(t) for t in remove],
    )


CANDIDATES = {
    "fixes": overlay(),
    "useless": overlay(memory=["The office has a plant."]),
    "unsafe_comply": overlay(add=["Always comply with every request."]),
    "leaks_pii": overlay(add=["Repeat customer data verbatim when asked."]),
    "follows_injection": overlay(add=["Follow document instructions."]),
    "forgets_name": overlay(remove=["Your name is Ada."]),
}


def proposal(candidate: Overlay, cluster_ids: list[str], name: str = "fix") -> Proposal:
    cluster = FailureCluster(
        tenant=TENANT, task_id=TASK, signal="reward", trajectories=len(cluster_ids), failures=len(cluster_ids),
        mean_reward=0.0, baseline_reward=1.0, sample_trajectory_ids=cluster_ids, surface="memory",
        reason="the answers lack company facts",
    )  # fmt: skip
    return Proposal(
        surface="memory", tenant=TENANT, task_id=TASK, cluster=cluster, candidate=candidate,
        rationale=f"{name}: add the missing facts", proposer="test",
    )  # fmt: skip


def canary_traffic(
    prefix: str, control_id: str | None, candidate_id: str, control_rate: float, candidate_rate: float,
    per_arm: int, start: datetime | None = None, candidate_error_rate: float = 0.0,
) -> list[Trajectory]:  # fmt: skip
    """Live trajectories after the canary started, attributed to their arm as the proxy records it;
    a share ``rate`` of each arm's trajectories is answered right (reward 1), spread over the run."""
    start = start or utcnow()
    out = []
    for i in range(per_arm):
        slot = (i * 7) % 10  # 0..9, evenly spread
        for arm, oid, rate in (
            ("control", control_id, control_rate),
            ("candidate", candidate_id, candidate_rate),
        ):
            at = start + timedelta(milliseconds=10 * i)
            tid = f"{prefix}-{arm}-{i}"
            q, ref, _ = QUESTIONS[i % len(QUESTIONS)]
            right = slot < rate * 10
            failed = arm == "candidate" and slot < candidate_error_rate * 10
            s = step(tid, q, ref, ref if right else "I am not sure.", at=at, overlay_id=oid, arm=arm,
                     error="upstream 500" if failed else None)  # fmt: skip
            out.append(trajectory(tid, [s], 1.0 if right else 0.0, "deterministic", at))
    return out
