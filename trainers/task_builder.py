"""Trajectory -> training task: pure logic, no Kafka, no Ray (the feeder actor is a thin adapter).

The task is the trajectory's last model call: its full context is the prompt, its first choice is the
logged completion. Departure from the usual recipe: when every step recorded its token ids, the prompt is
rebuilt from those ids (token-in-token-out) instead of re-rendering the chat, which avoids multi-turn
retokenization drift; otherwise the chat is rendered with the model's template.
"""

from __future__ import annotations

import fnmatch
from typing import Any

from sluice.events import StepEvent, Trajectory, reconstruct_messages
from trainers.exceptions import TaskError
from trainers.samples import LoggedCompletion, TrainingTask
from trainers.tasks.base import Task


def recorded_prompt_ids(steps: list[StepEvent]) -> list[int] | None:
    """Full prompt token ids of the last step from the recorded deltas, or None when any piece is missing."""
    previous: list[int] | None = None  # previous step's prompt + completion ids
    prompt: list[int] | None = None
    for step in sorted(steps, key=lambda s: s.step_index):
        act = step.action
        if act.prompt_token_ids is None or not act.choices or act.choices[0].token_ids is None:
            return None
        if act.prompt_token_prefix_len:
            if previous is None or len(previous) < act.prompt_token_prefix_len:
                return None
            prompt = previous[: act.prompt_token_prefix_len] + act.prompt_token_ids
        else:
            prompt = list(act.prompt_token_ids)
        previous = prompt + act.choices[0].token_ids
    return prompt


def build_training_task(
    traj: Trajectory,
    task: Task,
    tokenizer: Any,
    model_globs: list[str],
    max_prompt_tokens: int,
) -> TrainingTask:
    """Raises ``TaskError`` with the reason when the trajectory cannot become a task."""
    steps = [s for s in traj.steps if s.action.choices]
    if not steps:
        raise TaskError("no prompt", "the trajectory has no model call with an output")
    model = steps[-1].metadata.gen_ai.request_model
    if not any(fnmatch.fnmatchcase(model, g) for g in model_globs):
        raise TaskError("unknown model", f"{model!r} is not in trainer.models {model_globs}")
    history = reconstruct_messages(steps)
    completion_msg, context = history[-1], history[:-1]
    messages = [m.model_dump(mode="json", exclude_none=True) for m in context]
    if not any(m.get("role") in ("user", "system", "developer", "tool") for m in messages):
        raise TaskError("no prompt", "the last model call has no input messages")
    prompt_ids = recorded_prompt_ids(steps)
    if prompt_ids is None:
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        prompt_ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if len(prompt_ids) > max_prompt_tokens:
        raise TaskError("prompt too long", f"{len(prompt_ids)} tokens > {max_prompt_tokens}")
    choice = steps[-1].action.choices[0]
    text = completion_msg.content if isinstance(completion_msg.content, str) else ""
    token_ids = choice.token_ids
    if not token_ids:  # retokenize the text; a completed answer ends with the stop token
        token_ids = tokenizer(text, add_special_tokens=False)["input_ids"] if text else []
        if token_ids and choice.finish_reason == "stop":
            token_ids.append(tokenizer.eos_token_id)
    logprobs = (
        choice.logprobs
        if choice.token_ids and choice.logprobs and len(choice.logprobs) == len(token_ids)
        else None
    )
    logged = LoggedCompletion(text=text, token_ids=token_ids, logprobs=logprobs) if token_ids else None
    return TrainingTask(
        trajectory_id=traj.trajectory_id,
        version=traj.version,
        messages=messages,
        prompt_ids=prompt_ids,
        reference=task.reference(messages, traj),
        logged_reward=traj.reward,
        logged=logged,
    )
