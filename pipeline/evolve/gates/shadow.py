"""Shadow evaluation: the cluster's recorded prompts re-run against the backend with the candidate
overlay and without it (off the request path), each answer graded by the task's grader."""

from __future__ import annotations

from typing import Any

from governance.evolve.gates import GateResult, shadow_decision
from governance.evolve.overlay_apply import apply_to_chat, restore_tool_names
from pipeline.evolve.backend import EvalClient, reply_text
from pipeline.evolve.evidence import RecordedPrompt
from pipeline.evolve.graders import GraderChoice, grade, task_of
from pipeline.evolve.loop_config import ShadowConfig
from sluice.evolution import Overlay

Policies = tuple[str | None, str | None]
"""The model policy versions the (control, candidate) arms ask for; (None, None): the server's default."""


def answer_both(
    eval_client: EvalClient,
    bodies: list[dict[str, Any]],
    control: Overlay | None,
    candidate: Overlay | None,
    policies: Policies = (None, None),
) -> tuple[list[str], list[str]]:
    """Each body answered under the control arm and under the candidate's (tool names mapped back): the
    arms differ by their overlay, by their model policy version, or both."""
    sent = [apply_to_chat(b, control) for b in bodies] + [apply_to_chat(b, candidate) for b in bodies]
    asked = [policies[0]] * len(bodies) + [policies[1]] * len(bodies)
    got = eval_client.answer_all(sent, policies=asked)
    n = len(bodies)
    ctrl = [reply_text(restore_tool_names(m, control)) for m in got[:n]]
    cand = [reply_text(restore_tool_names(m, candidate)) for m in got[n:]]
    return ctrl, cand


def run_shadow(
    eval_client: EvalClient,
    prompts: list[RecordedPrompt],
    grader: GraderChoice,
    control: Overlay | None,
    candidate: Overlay | None,
    cfg: ShadowConfig,
    policies: Policies = (None, None),
    non_inferior: bool = False,
) -> GateResult:
    """``control`` is the scope's active overlay (None: the bare agent). A recorded prompt is the request
    as the agent sent it (the proxy records the agent's messages, not its own edits), so each arm applies
    its own overlay to the same request and the answers differ by the overlay only.

    A weights candidate (``policies``) must not lose to the serving version (``non_inferior``); an overlay
    must beat control by the margin. ``grader`` is a task, or a function from a prompt to its task (a
    pooled policy answers every task, each graded by its own checker)."""
    prompts = prompts[: cfg.max_prompts]
    ctrl, cand = answer_both(eval_client, [p.body for p in prompts], control, candidate, policies)
    k_scores = [grade(task_of(grader, p), p, r) for p, r in zip(prompts, ctrl, strict=True)]
    c_scores = [grade(task_of(grader, p), p, r) for p, r in zip(prompts, cand, strict=True)]
    result = shadow_decision(k_scores, c_scores, cfg.margin, cfg.min_prompts, non_inferior)
    samples = [
        {
            "trajectory_id": p.trajectory.trajectory_id,
            "control": k,
            "candidate": c,
            "candidate_reply": r[:160],
        }
        for p, k, c, r in zip(prompts[:5], k_scores, c_scores, cand, strict=False)
    ]
    return result.model_copy(update={"numbers": {**result.numbers, "samples": samples}})
