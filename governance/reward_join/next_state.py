"""Rewards read from the next state: what happened after a step says how the step went.

Three signals, each on by config (``RewardJoinConfig.next_state``), each a ``kind="feedback"`` reward on
the step it judges, with a source of its own so ``source_weights`` weigh it like any other source:
- ``harvest:tool_error``: a tool's answer reports an error in the tool's own format (an ``is_error`` flag,
  a non-zero exit code, a JSON body with a non-empty ``error``, an error ``status``/``ok: false``, an
  HTTP status of 400 or more); it marks the step whose action made the call.
- ``harvest:retry``: the next step re-sends the last user message before the answer (same text, within
  ``retry_window_s``) on a history that leaves the answer out (its prefix stops before the answer: the
  agent asked again rather than continued); it marks that answer. A conversation that carries the answer
  forward and repeats a message ("hello" twice) is no retry.
- ``harvest:correction``: the next step's new user message contradicts the answer by one of the
  configured patterns (``correction_patterns``: English, German, French, Spanish, Portuguese). Rule-based
  only, never a model call: it runs on every assembly.

Pure: the assembled steps in, rewards out; ids derive from the judged step's event id and the cause, so
re-assembling a trajectory (a later version) gives the same rewards.

    python -m pytest tests/governance/reward_join/test_next_state.py
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from governance.config import NextStateConfig
from sluice.events import Message, Reward, StepEvent, ToolResult
from sluice.json_text import loads_or_none
from sluice.step_refs import compact_step_reasons

TOOL_ERROR, RETRY, CORRECTION = "tool_error", "retry", "correction"
SOURCE_PREFIX = "harvest:"
_ERROR_STATUS = frozenset({"error", "failed", "failure", "fail"})


def _error_body(body: Any) -> bool:
    """A JSON answer that reports an error: ``error``/``errors`` set, ``ok``/``success`` false, an error
    ``status``, an HTTP status of 400 or more, or a non-zero ``exit_code``/``returncode``."""
    if not isinstance(body, dict):
        return False
    if body.get("error") or body.get("errors") or body.get("ok") is False or body.get("success") is False:
        return True
    status = body.get("status")
    if isinstance(status, str) and status.strip().lower() in _ERROR_STATUS:
        return True
    code = body.get("status_code", status if isinstance(status, int) else None)
    if isinstance(code, int) and not isinstance(code, bool) and code >= 400:
        return True
    exit_code = body.get("exit_code", body.get("returncode"))
    return isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code != 0


def _text_of(content: str | list[dict[str, Any]] | None) -> str:
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return content or ""


def is_tool_error(result: ToolResult) -> bool:
    """Whether a tool's answer reports an error in the tool's own format."""
    if result.is_error or (result.exit_code is not None and result.exit_code != 0):
        return True
    if isinstance(result.content, list) and any(
        isinstance(p, dict) and (p.get("is_error") or p.get("isError")) for p in result.content
    ):
        return True
    text = _text_of(result.content).strip()
    if not text.startswith("{"):
        return False
    return _error_body(loads_or_none(text))


@lru_cache(maxsize=8)
def _compiled(patterns: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)


def is_correction(text: str, cfg: NextStateConfig) -> bool:
    """Whether a user turn contradicts the answer before it (a configured pattern matches its start)."""
    head = text.strip()[: cfg.correction_scan_chars]
    return (
        bool(cfg.correction_patterns) and _compiled(tuple(cfg.correction_patterns)).search(head) is not None
    )


def _reward(step: StepEvent, signal: str, cause: str, cfg: NextStateConfig, detail: str | None) -> Reward:
    return Reward(
        reward_id=f"{step.event_id}:{signal}:{cause}",
        name=signal,
        kind="feedback",
        value=cfg.values.get(signal),
        critique=detail,
        source=SOURCE_PREFIX + signal,
        step_index=step.step_index,
        created_at=step.created_at,
    )


def _last_user(messages: list[Message]) -> str | None:
    texts = [_text_of(m.content) for m in messages if m.role == "user"]
    return texts[-1].strip() if texts else None


def _rewound(prev: StepEvent, step: StepEvent) -> bool:
    """Whether ``step``'s history leaves out ``prev``'s answer (it extends at most ``prev``'s own prompt)."""
    prompt_len = prev.observation.prefix_message_count + len(prev.observation.messages)
    return step.observation.prefix_message_count < prompt_len


def harvest_next_state(steps: list[StepEvent], cfg: NextStateConfig) -> list[Reward]:
    """Rewards for the steps of an assembled trajectory (ordered, tool answers attached to the asking
    step) judged by what came after them."""
    out: list[Reward] = []
    if cfg.tool_error:
        for step in steps:
            for i, result in enumerate(step.action_result.tool_results):
                if is_tool_error(result):
                    cause = result.tool_call_id or str(i)
                    out.append(_reward(step, TOOL_ERROR, cause, cfg, result.tool_name))
    asked: str | None = None
    for prev, step in zip(steps, steps[1:], strict=False):
        asked = _last_user(prev.observation.messages) or asked
        new_user = _last_user(step.observation.messages)
        if new_user is None:
            continue
        quick = (step.created_at - prev.created_at).total_seconds() <= cfg.retry_window_s
        if cfg.retry and quick and asked is not None and new_user == asked and _rewound(prev, step):
            out.append(_reward(prev, RETRY, step.event_id, cfg, None))
        elif cfg.correction and is_correction(new_user, cfg):
            out.append(_reward(prev, CORRECTION, step.event_id, cfg, None))
    return out


def harvested_reasons(rewards: list[Reward]) -> list[str]:
    """``harvested:<signal>@<steps>`` per signal, as eligibility reasons name them (steps as ranges)."""
    found = {(r.name, r.step_index) for r in rewards if r.source.startswith(SOURCE_PREFIX)}
    ordered = sorted(found, key=lambda p: (p[0], -1 if p[1] is None else p[1]))
    return compact_step_reasons([f"harvested:{name}@{index}" for name, index in ordered])
