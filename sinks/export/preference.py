"""Preference pairs from user feedback: the ``dpo`` export layout (``prompt``, ``chosen``, ``rejected``).

The rule, applied to the trajectories of the export's query:

1. **Judged answers.** An answer is the first choice of one step. Its verdict is the *latest* feedback
   signal recorded for that step (``POST /v1/trajectories/{id}/feedback`` with ``step``, or a step's own
   ``action_result.feedback``): ``accept`` / ``thumbs_up`` make it *accepted*; ``edit``, ``retry``,
   ``delete`` / ``thumbs_down`` make it *rejected* (the user changed it, asked again, or threw it away).
   Steps without step-level feedback, or whose answer has no text and no tool call, are not used.
2. **Same question.** Answers are compared only when the model saw the same thing: the same tenant and
   the same context (every message before the answer, hashed with ``message_hash``). A retry is such a
   second answer, whether the agent recorded it as a later step of the trajectory or as a new trajectory.
3. **Pairs.** Each rejected answer is paired with each accepted answer of its context:
   ``prompt`` = the context, ``chosen`` = [accepted answer], ``rejected`` = [rejected answer] (TRL's
   conversational preference format). Identical answers give no pair. An ``edit`` counts against the
   answer it was given on; the edited text itself is not in the store (feedback carries a comment), so
   the pair's chosen side is the answer the user accepted for the same context.

Pairs may join trajectories anywhere in the query's result, so the judged answers (only those, not
whole trajectories) are held until the last row is read and the pairs are written at the end.
``trajectory_id`` is the rejected answer's trajectory and ``chosen_trajectory_id`` the chosen one's:
erasure drops a pair when either is erased.

    sluice export --layout dpo --format jsonl --query "SELECT * FROM trajectories" --out prefs.jsonl
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa

from sinks.export.layout import MESSAGE_TYPE, context_before, openai_message
from sluice.events import StepEvent, Trajectory, message_hash

ACCEPTED = frozenset({"accept", "thumbs_up"})
REJECTED = frozenset({"edit", "retry", "delete", "thumbs_down"})

DPO_SCHEMA = pa.schema(
    [
        ("prompt", pa.list_(MESSAGE_TYPE)),
        ("chosen", pa.list_(MESSAGE_TYPE)),
        ("rejected", pa.list_(MESSAGE_TYPE)),
        ("trajectory_id", pa.string()),
        ("step_index", pa.int32()),
        ("rejected_feedback", pa.string()),
        ("chosen_trajectory_id", pa.string()),
        ("chosen_step_index", pa.int32()),
        ("chosen_feedback", pa.string()),
        ("tenant", pa.string()),
        ("context_hash", pa.string()),
        ("model_version", pa.string()),
    ]
)


@dataclass(frozen=True)
class Feedback:
    """One step-level feedback signal as the store keeps it (``rewards`` rows of kind ``feedback``)."""

    kind: str
    step_index: int
    at: datetime


@dataclass(frozen=True)
class JudgedAnswer:
    tenant: str
    context_hash: str
    prompt: list[dict[str, Any]]
    answer: dict[str, Any]
    verdict: str  # the feedback kind that decided it
    accepted: bool
    trajectory_id: str
    step_index: int
    model_version: str | None


def _verdicts(steps: list[StepEvent], feedback: list[Feedback]) -> dict[int, str]:
    """Step index -> the latest feedback kind that accepts or rejects its answer."""
    signals = list(feedback)
    for s in steps:  # signals a step carries itself (deduplicated with the store's rows by kind and time)
        signals += [Feedback(f.kind, s.step_index, f.at) for f in s.action_result.feedback]
    latest: dict[int, Feedback] = {}
    for f in sorted(set(signals), key=lambda f: f.at):
        if f.kind in ACCEPTED or f.kind in REJECTED:
            latest[f.step_index] = f
    return {i: f.kind for i, f in latest.items()}


def judged_answers(t: Trajectory, steps: list[StepEvent], feedback: list[Feedback]) -> list[JudgedAnswer]:
    """The answers of one trajectory that feedback accepted or rejected (rule 1)."""
    steps = sorted(steps, key=lambda s: s.step_index)
    verdicts = _verdicts(steps, feedback)
    out = []
    for k, s in enumerate(steps):
        verdict = verdicts.get(s.step_index)
        if verdict is None or not s.action.choices:
            continue
        answer = openai_message(s.action.choices[0].message)
        if not answer["content"] and not answer["tool_calls"]:
            continue
        context = context_before(steps, k)
        out.append(
            JudgedAnswer(
                tenant=t.tenant,
                context_hash=message_hash(context),
                prompt=[openai_message(m) for m in context],
                answer=answer,
                verdict=verdict,
                accepted=verdict in ACCEPTED,
                trajectory_id=t.trajectory_id,
                step_index=s.step_index,
                model_version=s.metadata.model_version,
            )
        )
    return out


def preference_pairs(answers: list[JudgedAnswer]) -> list[dict[str, Any]]:
    """Rows of ``DPO_SCHEMA``: every rejected answer against every accepted one of its context (2, 3)."""
    groups: dict[tuple[str, str], list[JudgedAnswer]] = {}
    for a in answers:
        groups.setdefault((a.tenant, a.context_hash), []).append(a)
    rows = []
    for group in groups.values():
        for bad in (a for a in group if not a.accepted):
            for good in (a for a in group if a.accepted):
                if good.answer == bad.answer:
                    continue
                rows.append(
                    {
                        "prompt": good.prompt,
                        "chosen": [good.answer],
                        "rejected": [bad.answer],
                        "trajectory_id": bad.trajectory_id,
                        "step_index": bad.step_index,
                        "rejected_feedback": bad.verdict,
                        "chosen_trajectory_id": good.trajectory_id,
                        "chosen_step_index": good.step_index,
                        "chosen_feedback": good.verdict,
                        "tenant": good.tenant,
                        "context_hash": good.context_hash,
                        "model_version": bad.model_version,
                    }
                )
    return rows
