"""Trajectory -> live samples: the recorded model calls are the rollouts (pure logic, no Kafka, no Ray).

Token-in-token-out: each step's prompt ids are rebuilt from what the proxy recorded (``prompt_token_ids``
after ``prompt_token_prefix_len`` tokens shared with the previous step's prompt + completion) and its
completion is ``choices[0].token_ids`` with the behaviour ``logprobs`` the serving engine reported. Nothing
is re-generated or re-tokenized. Only where a backend gave no token ids is the call tokenized with the
served model's tokenizer (chat template of the reconstructed context), and the sample says so
(``retokenized``); its behaviour logprobs cannot be aligned and are left out.

A trajectory whose steps chain (each prompt starts with the previous prompt + completion) trains as one
sequence with a loss mask over its model-generated tokens (``trainers.live.merge``); steps that do not chain
train as their own samples.

The reward of a step is the mean of the rewards posted for that step (``Reward.step_index``), else the
trajectory's combined reward; a step with neither is left out as unrewarded. The policy version of a step is
the oldest version the backend reported for it (a response that straddled a swap names two).
"""

from __future__ import annotations

import fnmatch
import hashlib
import statistics
from collections import Counter
from typing import Any

from sluice.events import StepEvent, Trajectory, reconstruct_messages
from sluice.evolution import parse_policy_version
from trainers.live.merge import StepPiece, merge_steps
from trainers.live.samples import LiveItem, LiveSample


def parse_version(step: StepEvent) -> tuple[str, int] | None:
    """(learning scope, number) of the oldest policy version that served this step; None when it names
    no version a trainer made, or versions of two scopes."""
    md = step.metadata
    names = md.policy_versions or ([md.model_version] if md.model_version is not None else [])
    parsed = [parse_policy_version(v) for v in names]
    if not parsed or any(p is None for p in parsed):
        return None
    scopes = {p[0] for p in parsed if p is not None}
    if len(scopes) != 1:
        return None
    return scopes.pop(), min(p[1] for p in parsed if p is not None)


def group_key(step: StepEvent, task_id: str | None, prompt_ids: list[int], prefix_tokens: int | None) -> str:
    """GRPO group of a sample: the agent's task id, else a hash of its prompt's (first N) token ids."""
    if task_id:
        return f"task:{task_id}"
    ids = prompt_ids if prefix_tokens is None else prompt_ids[:prefix_tokens]
    digest = hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()[:16]
    return f"prompt:{step.metadata.gen_ai.request_model}:{digest}"


def baseline_key(step: StepEvent, task_id: str | None) -> str:
    """Running-baseline key of a one-member group: the task id, else the harness (system prompt) it ran in."""
    if task_id:
        return f"task:{task_id}"
    md = step.metadata
    return f"harness:{md.gen_ai.request_model}:{md.harness_fingerprint or '-'}"


def step_reward(traj: Trajectory, step_index: int) -> tuple[float | None, float | None, list[str]]:
    """(reward of the step, unix time its newest reward was posted, the sources of those rewards)."""
    own = [r for r in traj.rewards if r.step_index == step_index and r.value is not None]
    used = own or [r for r in traj.rewards if r.value is not None]
    at = max((r.created_at.timestamp() for r in used), default=None)
    sources = sorted({r.source for r in used})
    if own:
        return statistics.fmean(r.value for r in own if r.value is not None), at, sources
    return traj.reward, at, sources


def _retokenize(steps: list[StepEvent], i: int, tokenizer: Any) -> tuple[list[int], list[int]]:
    """Prompt and completion ids of step i tokenized by the trainer (the backend recorded none)."""
    step = steps[i]
    if step.observation.prompt_text is not None:
        prompt = tokenizer(step.observation.prompt_text, add_special_tokens=False)["input_ids"]
    else:
        context = reconstruct_messages(steps[: i + 1])[:-1]  # ends with this step's own completion
        messages = [m.model_dump(mode="json", exclude_none=True) for m in context]
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        prompt = tokenizer(text, add_special_tokens=False)["input_ids"]
    choice = step.action.choices[0]
    content = choice.message.content if isinstance(choice.message.content, str) else ""
    completion = tokenizer(content, add_special_tokens=False)["input_ids"] if content else []
    if completion and choice.finish_reason == "stop":
        completion.append(tokenizer.eos_token_id)  # a finished answer ends with the stop token
    return list(prompt), list(completion)


def extract_samples(
    traj: Trajectory,
    tokenizer: Any,
    model_globs: list[str],
    max_prompt_tokens: int,
    prefix_tokens: int | None = None,
    merge: bool = True,
) -> LiveItem:
    """Every trainable model call of this trajectory version (chained runs merged into one sample unless
    ``merge`` is off), and a count of the steps left out by reason ("no output", "unknown model",
    "unrewarded", "prompt too long", "empty completion")."""
    steps = sorted(traj.steps, key=lambda s: s.step_index)
    task_id = next((s.metadata.task_id for s in reversed(steps) if s.metadata.task_id), None)
    skipped: Counter[str] = Counter()
    pieces: list[StepPiece] = []
    previous: list[int] | None = None  # previous step's prompt + completion ids, while the record is whole
    last_trained = False  # the previous step became a piece
    for i, step in enumerate(steps):
        act = step.action
        if not act.choices or step.action_result.error is not None:
            skipped["no output"] += 1
            previous, last_trained = None, False
            continue
        choice = act.choices[0]
        prompt: list[int] | None = None
        chains = False
        if act.prompt_token_ids is not None and choice.token_ids is not None:
            if act.prompt_token_prefix_len == 0:
                prompt = list(act.prompt_token_ids)
            elif previous is not None and len(previous) >= act.prompt_token_prefix_len:
                prompt = previous[: act.prompt_token_prefix_len] + act.prompt_token_ids
                chains = last_trained and act.prompt_token_prefix_len == len(previous)
        if prompt is not None:
            completion, retokenized = list(choice.token_ids or []), False
            logprobs = (
                choice.logprobs if choice.logprobs and len(choice.logprobs) == len(completion) else None
            )
        else:
            prompt, completion = _retokenize(steps, i, tokenizer)
            retokenized, logprobs = True, None
        previous = None if retokenized else prompt + completion
        model = step.metadata.gen_ai.request_model
        reward, reward_at, sources = step_reward(traj, step.step_index)
        reason = None
        if not any(fnmatch.fnmatchcase(model, g) for g in model_globs):
            reason = "unknown model"
        elif reward is None:
            reason = "unrewarded"
        elif len(prompt) > max_prompt_tokens:
            reason = "prompt too long"
        elif not completion or not prompt:
            reason = "empty completion"
        last_trained = reason is None
        if reason is not None:
            skipped[reason] += 1
            continue
        temperature = step.metadata.sampling.temperature
        served = parse_version(step)
        sample = LiveSample(
            trajectory_id=traj.trajectory_id,
            version=traj.version,
            step_index=step.step_index,
            prompt_ids=prompt,
            token_ids=completion,
            logprobs=logprobs,
            reward=float(reward),
            policy_version=served[1] if served else None,
            policy_scope=served[0] if served else None,
            recorded_version=step.metadata.model_version,
            temperature=temperature if temperature else 1.0,
            group_key=group_key(step, task_id, prompt, prefix_tokens),
            baseline_key=baseline_key(step, task_id),
            retokenized=retokenized,
            reward_at=reward_at,
            tenant=traj.tenant,
            reward_sources=sources,
        )
        pieces.append(StepPiece(sample, chains))
    per_step_reward = any(r.step_index is not None and r.value is not None for r in traj.rewards)
    samples, counts = merge_steps(pieces, per_step_reward, merge)
    return LiveItem(
        trajectory_id=traj.trajectory_id,
        version=traj.version,
        samples=samples,
        skipped_steps=dict(skipped),
        merge=counts.as_dict(),
    )
