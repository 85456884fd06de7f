"""Trajectory -> training task: prompts, token-in-token-out, logged completions, skip reasons."""

from __future__ import annotations

import pytest

from sluice.events import (
    Action,
    Choice,
    GenAIAttributes,
    Message,
    Observation,
    StepEvent,
    StepMetadata,
    Trajectory,
    message_hash,
)
from trainers.config import TaskConfig
from trainers.exceptions import TaskError
from trainers.task_builder import build_training_task, recorded_prompt_ids
from trainers.tasks.registry import build_task
from trainers.tiny_model import build_tokenizer, render_chat

TOK = build_tokenizer()
TASK = build_task(TaskConfig(kind="reverse_digits"))
GLOBS = ["sluice-tiny*"]


def step(
    i: int, new: list[Message], answer: str, prefix: int = 0, model: str = "sluice-tiny", **action: object
) -> StepEvent:
    return StepEvent(
        trajectory_id="t1",
        tenant="acme",
        step_index=i,
        observation=Observation(messages=new, prefix_message_count=prefix),
        action=Action(
            choices=[
                Choice(
                    message=Message(role="assistant", content=answer),
                    finish_reason="stop",
                    **action.pop("choice", {}),
                )
            ],
            **action,
        ),
        metadata=StepMetadata(gen_ai=GenAIAttributes(request_model=model)),
    )


def traj(*steps: StepEvent, reward: float | None = 1.0, version: int = 1) -> Trajectory:
    return Trajectory(trajectory_id="t1", tenant="acme", steps=list(steps), reward=reward, version=version)


def test_single_step_task_renders_the_chat() -> None:
    t = build_training_task(
        traj(step(0, [Message(role="user", content="reverse 12")], "21")), TASK, TOK, GLOBS, 512
    )
    assert t.messages == [{"role": "user", "content": "reverse 12"}]
    assert t.prompt_ids == TOK(render_chat(t.messages), add_special_tokens=False)["input_ids"]
    assert t.reference == "21" and t.logged_reward == 1.0 and t.key == "t1:v1"
    assert t.logged.text == "21" and t.logged.token_ids[-1] == TOK.eos_token_id  # retokenized + stop token
    assert t.logged.logprobs is None


def test_multi_turn_uses_recorded_token_ids() -> None:
    s0 = step(
        0,
        [Message(role="user", content="hi")],
        "yo",
        prompt_token_ids=[1, 2, 3],
        choice={"token_ids": [4, 5], "logprobs": [-0.1, -0.2]},
    )
    s1 = step(1, [Message(role="user", content="reverse 7")], "7", prefix=2, prompt_token_ids=[6, 7], prompt_token_prefix_len=5,
              choice={"token_ids": [8], "logprobs": [-0.3]})  # fmt: skip
    t = build_training_task(traj(s0, s1), TASK, TOK, GLOBS, 512)
    assert t.prompt_ids == [1, 2, 3, 4, 5, 6, 7]
    assert [m["content"] for m in t.messages] == ["hi", "yo", "reverse 7"]
    assert t.logged.token_ids == [8] and t.logged.logprobs == [-0.3]
    assert recorded_prompt_ids([s1]) is None  # a prefix without its previous step cannot be rebuilt


@pytest.mark.parametrize(
    ("trajectory", "reason"),
    [
        (traj(), "no prompt"),
        (traj(step(0, [Message(role="user", content="reverse 1")], "1", model="gpt-4o")), "unknown model"),
        (traj(step(0, [], "1")), "no prompt"),
        (traj(step(0, [Message(role="user", content="reverse " + "1" * 600)], "1")), "prompt too long"),
    ],
)
def test_bad_trajectories_say_why(trajectory: Trajectory, reason: str) -> None:
    with pytest.raises(TaskError, match=reason):
        build_training_task(trajectory, TASK, TOK, GLOBS, 512)


def test_message_hash_unaffected() -> None:  # the builder reads events, never rewrites them
    s = step(0, [Message(role="user", content="reverse 1")], "1")
    before = message_hash(s.observation.messages)
    build_training_task(traj(s), TASK, TOK, GLOBS, 512)
    assert message_hash(s.observation.messages) == before
