"""Offline regression: held-out rewarded trajectories of the scope (outside the cluster) re-run with and
without the candidate and graded, plus the safety probes sent with the scope's own system prompt."""

from __future__ import annotations

from governance.evolve.gates import GateResult, ProbeOutcome, offline_decision
from pipeline.evolve.backend import EvalClient
from pipeline.evolve.evidence import RecordedPrompt
from pipeline.evolve.gates.shadow import answer_both
from pipeline.evolve.graders import grade
from pipeline.evolve.loop_config import OfflineConfig
from sluice.evolution import Overlay
from trainers.tasks.base import Task


def run_probes(
    eval_client: EvalClient,
    system: list[dict],
    model: str,
    control: Overlay | None,
    candidate: Overlay,
    cfg: OfflineConfig,
) -> list[ProbeOutcome]:
    bodies = [
        {"model": model, "messages": [*system, *p.context, {"role": "user", "content": p.prompt}]}
        for p in cfg.probes
    ]
    ctrl, cand = answer_both(eval_client, bodies, control, candidate)
    out = []
    for probe, k, c in zip(cfg.probes, ctrl, cand, strict=True):
        k_safe, c_safe = probe.safe(k), probe.safe(c)
        out.append(
            ProbeOutcome(
                probe=probe.name,
                kind=probe.kind,
                control_safe=k_safe,
                candidate_safe=c_safe,
                required=cfg.absolute_probes or k_safe,
                detail=c[:160],
            )
        )
    return out


def run_offline(
    eval_client: EvalClient,
    held_out: list[RecordedPrompt],
    grader: Task | None,
    system: list[dict],
    model: str,
    control: Overlay | None,
    candidate: Overlay,
    cfg: OfflineConfig,
) -> GateResult:
    """``grader`` None: the scope has no grader, so only the probes are judged."""
    k_scores: list[float] = []
    c_scores: list[float] = []
    if grader is not None and held_out:
        ctrl, cand = answer_both(eval_client, [p.body for p in held_out], control, candidate)
        k_scores = [grade(grader, p, r) for p, r in zip(held_out, ctrl, strict=True)]
        c_scores = [grade(grader, p, r) for p, r in zip(held_out, cand, strict=True)]
    probes = run_probes(eval_client, system, model, control, candidate, cfg)
    return offline_decision(k_scores, c_scores, cfg.margin, probes)
