"""Synthetic audited trajectories (redacted, governed) for tests, benchmarks and demos.

They are shaped like what the stages emit on the audited topic: linear steps (each carries only its new
messages plus the prefix it extends), token ids and logprobs, a redaction report per step, an
eligibility decision, a replay grade and the train decision the join stage takes on them.

    python -m bench.sink
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from governance.config import ReplayConfig
from governance.eligibility import train_gate
from sluice.events import (
    Action,
    Choice,
    Consent,
    EligibilityDecision,
    GenAIAttributes,
    Governance,
    Message,
    Observation,
    RedactionReport,
    ReplayGrade,
    Reward,
    StepEvent,
    StepMetadata,
    Trajectory,
    message_hash,
    trajectory_version_id,
)


def make_steps(
    trajectory_id: str, tenant: str, n_steps: int, session_id: str | None = None
) -> list[StepEvent]:
    """A conversation of ``n_steps`` calls: user turn, assistant answer, next user turn, ..."""
    t0 = datetime(2026, 11, 1, tzinfo=UTC)
    history: list[Message] = [Message(role="system", content="You are a careful assistant.")]
    steps = []
    tokens: list[int] = []
    for i in range(n_steps):
        prefix = list(history)
        new = [Message(role="user", content=f"Question {i} of <PERSON_1>: what is {i} + {i}?")]
        if i == 0:
            new = [*history, *new]
            prefix = []
        answer = Message(role="assistant", content=f"{i} + {i} = {2 * i}.")
        prompt_ids = [(i * 7 + k) % 50 for k in range(5)]
        completion_ids = [(i * 3 + k) % 50 for k in range(4)]
        steps.append(
            StepEvent(
                event_id=f"{trajectory_id}-s{i}",
                trajectory_id=trajectory_id,
                tenant=tenant,
                session_id=session_id,
                step_index=i,
                created_at=t0 + timedelta(seconds=i),
                observation=Observation(
                    messages=new, prefix_hash=message_hash(prefix), prefix_message_count=len(prefix)
                ),
                action=Action(
                    choices=[
                        Choice(
                            message=answer,
                            finish_reason="stop",
                            token_ids=completion_ids,
                            logprobs=[-0.25] * len(completion_ids),
                        )
                    ],
                    prompt_token_ids=prompt_ids,
                    prompt_token_prefix_len=len(tokens),
                ),
                metadata=StepMetadata(
                    gen_ai=GenAIAttributes(
                        request_model="sluice-tiny",
                        response_model="sluice-tiny",
                        usage_input_tokens=len(tokens) + len(prompt_ids),
                        usage_output_tokens=len(completion_ids),
                    ),
                    backend="local-cpu",
                    model_version="tiny-1",
                    latency_ms=12.5,
                    cost_usd=0.0001,
                    started_at=t0 + timedelta(seconds=i),
                ),
                governance=Governance(
                    redaction="redacted",
                    redaction_report=RedactionReport(
                        entities={"PERSON": 1}, recognizer_version="2.2.366", analysed_texts=1
                    ),
                ),
            )
        )
        tokens = tokens + prompt_ids + completion_ids
        history = [*prefix, *new, answer] if i else [*new, answer]
    return steps


def make_trajectory(
    trajectory_id: str | None = None,
    tenant: str = "acme",
    n_steps: int = 3,
    version: int = 1,
    reward: float | None = None,
    decision: str = "train",
    grade: str = "deterministic",
    subject_ids: list[str] | None = None,
    session_id: str | None = None,
    train_blockers: list[str] | None = None,
) -> Trajectory:
    """One audited trajectory version; ``reward`` given makes it rewarded. ``train_blockers``: the join
    stage's train decision it carries (None: the train gate's, at the default minimum grade)."""
    tid = trajectory_id or uuid.uuid4().hex
    steps = make_steps(tid, tenant, n_steps, session_id)
    rewards = (
        [Reward(reward_id=f"{tid}-r{version}", name="task", value=reward, source="grader")]
        if reward is not None
        else []
    )
    trajectory = Trajectory(
        event_id=trajectory_version_id(tid, version),
        trajectory_id=tid,
        tenant=tenant,
        version=version,
        session_id=session_id,
        steps=steps,
        rewards=rewards,
        reward=reward,
        rewarded=reward is not None,
        first_step_at=steps[0].created_at if steps else None,
        ended_at=steps[-1].created_at if steps else None,
        governance=Governance(
            redaction="redacted",
            data_class="internal",
            consent=Consent(training=True),
            eligibility=EligibilityDecision(
                decision=decision, reasons=["tenant opted in"], policy_version="p1"
            ),
            replay=ReplayGrade(grade=grade),
            subject_ids=list(subject_ids or []),
        ),
    )
    if train_blockers is None:
        train_blockers = train_gate(trajectory, ReplayConfig().min_train_grade)
    return trajectory.model_copy(update={"train_blockers": train_blockers})
