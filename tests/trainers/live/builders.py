"""Trajectories shaped the way the proxy records them (token ids, logprobs, versions), for live-mode tests."""

from __future__ import annotations

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
) -> StepEvent:
    return StepEvent(
        trajectory_id="t",
        tenant="acme",
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
) -> Trajectory:
    steps = [s.model_copy(update={"trajectory_id": tid}) for s in steps]
    rewards = [Reward(value=v, step_index=i) for i, v in (step_rewards or {}).items()]
    if reward is not None:
        rewards.append(Reward(value=reward))
    return Trajectory(
        trajectory_id=tid,
        event_id=f"{tid}:v{version}",
        tenant="acme",
        version=version,
        steps=steps,
        rewards=rewards,
        reward=reward,
        rewarded=reward is not None,
    )
