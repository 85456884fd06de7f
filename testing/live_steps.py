"""Trajectories shaped the way the proxy records them (token ids, logprobs, versions), for the live trainer's
tests and the learner's cost benchmark.

``step`` and ``trajectory`` build one step and one rewarded trajectory field by field; ``chained_trajectory``
builds a multi-step agent run the way an agent's calls arrive: each step re-sends the whole history (prompt,
earlier completions, tool results), so its ``prompt_token_prefix_len`` covers the previous prompt and
completion and its ``prompt_token_ids`` hold only what is new.

    python -m bench.trainer_cost
"""

from __future__ import annotations

import random

from sluice.events import (
    Action,
    Choice,
    GenAIAttributes,
    Message,
    Observation,
    Reward,
    SamplingParams,
    StepEvent,
    StepMetadata,
    Trajectory,
)


def step(
    index: int,
    prompt_ids: list[int] | None,
    token_ids: list[int] | None,
    logprobs: list[float] | None = None,
    prefix_len: int = 0,
    version: str | None = "0",
    versions: list[str] | None = None,
    task_id: str | None = None,
    text: str = "ok",
    user: str = "hi",
    model: str = "sluice-tiny",
    temperature: float | None = 1.0,
    harness: str | None = "h1",
    tenant: str = "acme",
) -> StepEvent:
    return StepEvent(
        trajectory_id="t",
        tenant=tenant,
        step_index=index,
        observation=Observation(
            messages=[Message(role="user", content=user)], prefix_message_count=2 * index
        ),
        action=Action(
            choices=[
                Choice(
                    message=Message(role="assistant", content=text),
                    finish_reason="stop",
                    token_ids=token_ids,
                    logprobs=logprobs,
                )
            ],
            prompt_token_ids=prompt_ids,
            prompt_token_prefix_len=prefix_len,
        ),
        metadata=StepMetadata(
            gen_ai=GenAIAttributes(request_model=model),
            sampling=SamplingParams(temperature=temperature),
            model_version=version,
            policy_versions=versions or ([version] if version else []),
            task_id=task_id,
            harness_fingerprint=harness,
        ),
    )


def trajectory(
    steps: list[StepEvent],
    reward: float | None = 1.0,
    tid: str = "t1",
    version: int = 1,
    step_rewards: dict[int, float] | None = None,
    tenant: str = "acme",
) -> Trajectory:
    steps = [s.model_copy(update={"trajectory_id": tid}) for s in steps]
    rewards = [Reward(value=v, step_index=i) for i, v in (step_rewards or {}).items()]
    if reward is not None:
        rewards.append(Reward(value=reward))
    return Trajectory(
        trajectory_id=tid,
        event_id=f"{tid}:v{version}",
        tenant=tenant,
        version=version,
        steps=steps,
        rewards=rewards,
        reward=reward,
        rewarded=reward is not None,
    )


def chained_trajectory(
    tid: str, n_steps: int, rng: random.Random, vocab: int, prompt: int, completion: int, tool: int
) -> Trajectory:
    """``n_steps`` chained model calls of random tokens (``prompt`` tokens first, then per step ``completion``
    generated and ``tool`` result tokens), rewarded 0 or 1 at random: tenant, model and task ``bench``."""
    steps, history = [], [rng.randrange(8, vocab) for _ in range(prompt)]
    for i in range(n_steps):
        new = history if i == 0 else [rng.randrange(8, vocab) for _ in range(tool)]
        prefix = 0 if i == 0 else len(history)
        if i:
            history = history + new
        out = [rng.randrange(8, vocab) for _ in range(completion)]
        steps.append(
            step(i, list(new), out, [-1.0] * completion, prefix_len=prefix, task_id="bench", text="-", user="-",
                 model="bench-model", harness=None, tenant="bench")
        )  # fmt: skip
        history = history + out
    return trajectory(steps, float(rng.random() < 0.5), tid=tid, tenant="bench")
