"""Traffic of a toy task, as the pipeline would deliver it: ``Trajectory`` records on the train topic
(``produce``: steps inline, the layout before 2.0; ``produce_by_reference``: as the join stage sends now).

For tests, demos and the benchmark: each trajectory is one chat call of ``sluice-tiny`` on a prompt the task
makes, with a logged completion (correct with probability ``logged_correct``, else a wrong answer) and its
reward graded by the task's own grader, the way traffic reaches the trainer after the reward join.

    python -c "from testing.toy_traffic import make_trajectories; print(len(make_trajectories(10)))"
"""

from __future__ import annotations

import random

from confluent_kafka import Producer

from app.config import SluiceConfig
from governance.reward_join import on_topic, step_payloads
from sluice.events import (
    Action,
    Choice,
    GenAIAttributes,
    Message,
    Observation,
    StepEvent,
    StepMetadata,
    Trajectory,
    encode,
)
from sluice.step_refs import step_record_key
from trainers.config import TaskConfig
from trainers.tasks.base import Task
from trainers.tasks.registry import build_task


def make_trajectory(
    task: Task,
    rng: random.Random,
    logged_correct: float = 0.0,
    model: str = "sluice-tiny",
    tenant: str = "acme",
) -> Trajectory:
    messages, reference = task.make_prompt(rng)
    if rng.random() < logged_correct:
        answer = reference
    else:
        answer = "".join(rng.choice("0123456789") for _ in range(max(1, len(reference))))
    ctx = task.context(messages, reference, is_logged=True)
    reward = task.grade(answer, ctx).value
    step = StepEvent(
        trajectory_id=f"toy-{rng.getrandbits(64):016x}",
        tenant=tenant,
        step_index=0,
        observation=Observation(messages=[Message(**m) for m in messages]),
        action=Action(
            choices=[Choice(message=Message(role="assistant", content=answer), finish_reason="stop")]
        ),
        metadata=StepMetadata(gen_ai=GenAIAttributes(request_model=model)),
    )
    return Trajectory(
        trajectory_id=step.trajectory_id,
        event_id=f"{step.trajectory_id}:v1",
        tenant=tenant,
        steps=[step],
        reward=reward,
        rewarded=True,
    )


def make_trajectories(
    n: int, task_cfg: TaskConfig | None = None, seed: int = 0, logged_correct: float = 0.0
) -> list[Trajectory]:
    task = build_task(task_cfg or TaskConfig(kind="reverse_digits"))
    rng = random.Random(seed)
    return [make_trajectory(task, rng, logged_correct) for _ in range(n)]


def produce(cfg: SluiceConfig, records: list[Trajectory | bytes], keys: list[str] | None = None) -> None:
    """Publish records keyed by trajectory id on the train topic (bytes are sent as they are)."""
    producer = Producer(cfg.broker.producer_config())
    topic = cfg.topics.name("trajectories_train")
    for i, rec in enumerate(records):
        key = keys[i] if keys else (rec.trajectory_id if isinstance(rec, Trajectory) else f"raw-{i}")
        producer.produce(topic, key=key, value=rec if isinstance(rec, bytes) else encode(rec))
        producer.poll(0)
    if producer.flush(30) != 0:
        raise RuntimeError("could not deliver every record to the train topic")


def produce_by_reference(cfg: SluiceConfig, versions: list[Trajectory], partition: int = 0) -> None:
    """Publish versions on the train topic as the join stage does (layout 2.0): each version's new step
    records (own keys), then its header, all on ``partition``."""
    producer = Producer(cfg.broker.producer_config())
    topic = cfg.topics.name("trajectories_train")
    stored = {s.event_id: (s, encode(s)) for v in versions for s in v.steps}
    sent: dict[str, dict[str, str]] = {}
    for v in versions:
        out = on_topic(v, sent.get(v.trajectory_id, {}), step_payloads(v, stored))
        sent[v.trajectory_id] = out.sent
        for event_id, body in out.step_records:
            producer.produce(
                topic, key=step_record_key(v.trajectory_id, event_id), value=body, partition=partition
            )
        producer.produce(topic, key=v.trajectory_id, value=encode(out.header), partition=partition)
        producer.poll(0)
    if producer.flush(30) != 0:
        raise RuntimeError("could not deliver every record to the train topic")
