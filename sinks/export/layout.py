"""Trajectories as rows the RL and SFT tools of this field load directly (pure functions).

Conversational layout as TRL and OpenRLHF read it: ``prompt`` (messages before the first action),
``completion`` (everything after: assistant turns, tool calls, tool results), ``messages`` (the whole
conversation, for SFT), ``reward`` and ``rewards``, ``group_id`` (the session, else the trajectory) for
GRPO-style grouping. Token ids, when every step recorded them, are rebuilt into one sequence:
``prompt_token_ids`` then ``completion_token_ids`` with ``completion_mask`` (1 = sampled by the model, 0 =
prompt/tool tokens) and ``completion_logprobs`` (sampling-time, 0.0 where masked), the multi-turn format
of agent RL trainers. ``granularity='step'`` gives one row per LLM call instead (prompt = full context).
Messages are OpenAI-shaped; list content made only of text parts is joined to a string.

    sluice export --format parquet --out train.parquet
"""

from __future__ import annotations

import json
from typing import Any, Literal

import pyarrow as pa

from sluice.events import Message, StepEvent, Trajectory, reconstruct_messages

Granularity = Literal["trajectory", "step"]

_TOOL_CALL = pa.struct(
    [
        ("id", pa.string()),
        ("type", pa.string()),
        ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())])),
    ]
)
MESSAGE_TYPE = pa.struct(
    [
        ("role", pa.string()),
        ("content", pa.string()),
        ("name", pa.string()),
        ("tool_call_id", pa.string()),
        ("tool_calls", pa.list_(_TOOL_CALL)),
    ]
)
_REWARD = pa.struct(
    [
        ("name", pa.string()),
        ("kind", pa.string()),
        ("value", pa.float64()),
        ("source", pa.string()),
        ("step_index", pa.int32()),
    ]
)
RL_SCHEMA = pa.schema(
    [
        ("prompt", pa.list_(MESSAGE_TYPE)),
        ("completion", pa.list_(MESSAGE_TYPE)),
        ("messages", pa.list_(MESSAGE_TYPE)),
        ("reward", pa.float64()),
        ("rewards", pa.list_(_REWARD)),
        ("trajectory_id", pa.string()),
        ("version", pa.int32()),
        ("step_index", pa.int32()),
        ("session_id", pa.string()),
        ("group_id", pa.string()),
        ("tenant", pa.string()),
        ("model", pa.string()),
        ("model_version", pa.string()),
        ("policy_version", pa.string()),
        ("replay_grade", pa.string()),
        ("prompt_token_ids", pa.list_(pa.int32())),
        ("completion_token_ids", pa.list_(pa.int32())),
        ("completion_mask", pa.list_(pa.int8())),
        ("completion_logprobs", pa.list_(pa.float64())),
    ]
)


def text_content(content: str | list[dict[str, Any]] | None) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return "".join(str(p.get("text", "")) for p in content)
    return json.dumps(content, separators=(",", ":"))


def openai_message(m: Message) -> dict[str, Any]:
    return {
        "role": m.role,
        "content": text_content(m.content),
        "name": m.name,
        "tool_call_id": m.tool_call_id,
        "tool_calls": [
            {"id": c.id, "type": c.type, "function": {"name": c.name, "arguments": c.arguments}}
            for c in m.tool_calls
        ]
        if m.tool_calls
        else None,
    }


def context_before(steps: list[StepEvent], k: int) -> list[Message]:
    """What the model saw at step k (the messages before its action)."""
    ctx = reconstruct_messages(steps[: k + 1])
    return ctx[:-1] if steps[k].action.choices else ctx


def token_sequence(steps: list[StepEvent]) -> list[tuple[list[int], list[int], list[float]]] | None:
    """Per step: (full prompt ids, completion ids, logprobs), or None unless every step has ids."""
    out = []
    tokens: list[int] = []
    for s in steps:
        choice = s.action.choices[0] if s.action.choices else None
        if s.action.prompt_token_ids is None or choice is None or choice.token_ids is None:
            return None
        prompt = tokens[: s.action.prompt_token_prefix_len] + list(s.action.prompt_token_ids)
        logprobs = list(choice.logprobs) if choice.logprobs else [0.0] * len(choice.token_ids)
        out.append((prompt, list(choice.token_ids), logprobs))
        tokens = prompt + list(choice.token_ids)
    return out


def _trajectory_tokens(steps: list[StepEvent]) -> dict[str, list[Any] | None]:
    seq = token_sequence(steps)
    empty: dict[str, list[Any] | None] = {
        "prompt_token_ids": None,
        "completion_token_ids": None,
        "completion_mask": None,
        "completion_logprobs": None,
    }
    if not seq:
        return empty
    tokens, mask, logprobs = [], [], []
    for prompt, completion, lp in seq:
        keep = min(len(tokens), len(prompt))
        if prompt[:keep] != tokens[:keep]:
            return empty  # history was rewritten: no single token sequence
        env = prompt[len(tokens) :]
        tokens += env + completion
        mask += [0] * len(env) + [1] * len(completion)
        logprobs += [0.0] * len(env) + lp
    n_prompt = len(seq[0][0])
    return {
        "prompt_token_ids": tokens[:n_prompt],
        "completion_token_ids": tokens[n_prompt:],
        "completion_mask": mask[n_prompt:],
        "completion_logprobs": logprobs[n_prompt:],
    }


def _common(t: Trajectory, steps: list[StepEvent]) -> dict[str, Any]:
    last = steps[-1].metadata if steps else None
    elig, replay = t.governance.eligibility, t.governance.replay
    return {
        "reward": t.reward,
        "rewards": [
            {"name": r.name, "kind": r.kind, "value": r.value, "source": r.source, "step_index": r.step_index}
            for r in t.rewards
        ],
        "trajectory_id": t.trajectory_id,
        "version": t.version,
        "session_id": t.session_id,
        "group_id": t.session_id or t.trajectory_id,
        "tenant": t.tenant,
        "model": (last.gen_ai.response_model or last.gen_ai.request_model or None) if last else None,
        "model_version": last.model_version if last else None,
        "policy_version": elig.policy_version if elig else None,
        "replay_grade": replay.grade if replay else None,
    }


def rl_rows(
    t: Trajectory, steps: list[StepEvent], granularity: Granularity = "trajectory"
) -> list[dict[str, Any]]:
    """Rows of ``RL_SCHEMA`` for one trajectory version (``t.steps`` is ignored; pass its steps)."""
    steps = sorted(steps, key=lambda s: s.step_index)
    if not steps:
        return []
    common = _common(t, steps)
    if granularity == "step":
        rows = []
        seq = token_sequence(steps)
        for k, s in enumerate(steps):
            if not s.action.choices:
                continue
            prompt = [openai_message(m) for m in context_before(steps, k)]
            completion = [openai_message(s.action.choices[0].message)]
            prompt_ids, completion_ids, logprobs = seq[k] if seq else (None, None, None)
            rows.append(
                {
                    "prompt": prompt,
                    "completion": completion,
                    "messages": prompt + completion,
                    **common,
                    "step_index": s.step_index,
                    "prompt_token_ids": prompt_ids,
                    "completion_token_ids": completion_ids,
                    "completion_mask": [1] * len(completion_ids) if completion_ids is not None else None,
                    "completion_logprobs": logprobs,
                }
            )
        return rows
    full = [openai_message(m) for m in reconstruct_messages(steps)]
    prompt = [openai_message(m) for m in context_before(steps, 0)]
    completion = full[len(prompt) :] if full[: len(prompt)] == prompt else full
    return [
        {
            "prompt": prompt,
            "completion": completion,
            "messages": full,
            **common,
            "step_index": None,
            **_trajectory_tokens(steps),
        }
    ]
