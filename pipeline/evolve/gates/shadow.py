"""Shadow evaluation: the cluster's recorded prompts re-run against the backend with the candidate
overlay and without it (off the request path), each answer graded by the task's grader."""

from __future__ import annotations

from typing import Any

from governance.evolve.gates import GateResult, shadow_decision
from governance.evolve.overlay_apply import apply_to_chat, restore_tool_names
from pipeline.evolve.backend import EvalClient, reply_text
from pipeline.evolve.evidence import RecordedPrompt
from pipeline.evolve.graders import grade
from pipeline.evolve.loop_config import ShadowConfig
from sluice.evolution import Overlay
from trainers.tasks.base import Task


def answer_both(
    eval_client: EvalClient, bodies: list[dict[str, Any]], control: Overlay | None, candidate: Overlay
) -> tuple[list[str], list[str]]:
    """Each body answered under the control overlay and under the candidate (tool names mapped back)."""
    sent = [apply_to_chat(b, control) for b in bodies] + [apply_to_chat(b, candidate) for b in bodies]
    got = eval_client.answer_all(sent)
    n = len(bodies)
    ctrl = [reply_text(restore_tool_names(m, control)) for m in got[:n]]
    cand = [reply_text(restore_tool_names(m, candidate)) for m in got[n:]]
    return ctrl, cand


def run_shadow(
    eval_client: EvalClient,
    prompts: list[RecordedPrompt],
    grader: Task,
    control: Overlay | None,
    candidate: Overlay,
    cfg: ShadowConfig,
) -> GateResult:
    """``control`` is the scope's active overlay (None: the bare agent). A recorded prompt is the request
    as the agent sent it (the proxy records the agent's messages, not its own edits), so each arm applies
    its own overlay to the same request and the answers differ by the overlay only."""
    prompts = prompts[: cfg.max_prompts]
    ctrl, cand = answer_both(eval_client, [p.body for p in prompts], control, candidate)
    k_scores = [grade(grader, p, r) for p, r in zip(prompts, ctrl, strict=True)]
    c_scores = [grade(grader, p, r) for p, r in zip(prompts, cand, strict=True)]
    result = shadow_decision(k_scores, c_scores, cfg.margin, cfg.min_prompts)
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
