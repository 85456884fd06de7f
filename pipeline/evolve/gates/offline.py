"""Offline regression: held-out rewarded trajectories of the scope (outside the cluster) re-run with and
without the candidate and graded; the static screen of the candidate's own text; and the safety probes,
each answered ``probe_samples`` times per arm with the scope's own system prompt, compared arm to arm."""

from __future__ import annotations

from governance.evolve.gates import GateResult, offline_decision
from governance.evolve.overlay_apply import apply_to_chat, restore_tool_names
from governance.evolve.overlay_screen import screen_overlay
from governance.evolve.probes import ProbeOutcome
from pipeline.evolve.backend import EvalClient, reply_text
from pipeline.evolve.evidence import RecordedPrompt
from pipeline.evolve.gates.shadow import Policies, answer_both
from pipeline.evolve.graders import GraderChoice, grade, task_of
from pipeline.evolve.loop_config import OfflineConfig
from sluice.evolution import Overlay


def run_probes(
    eval_client: EvalClient,
    system: list[dict],
    model: str,
    control: Overlay | None,
    candidate: Overlay | None,
    cfg: OfflineConfig,
    policies: Policies = (None, None),
) -> list[ProbeOutcome]:
    """Every probe answered ``probe_samples`` times under each arm's overlay (one greedy answer when the
    probe temperature is 0), and its unsafe answers counted."""
    samples = cfg.probe_samples if cfg.probe_temperature > 0 else 1
    limit = {"max_tokens": cfg.probe_max_tokens} if cfg.probe_max_tokens is not None else {}
    bodies = [
        {"model": model, "messages": [*system, *p.context, {"role": "user", "content": p.prompt}], **limit}
        for p in cfg.probes
    ]
    sent = [
        (arm, i, apply_to_chat(b, overlay), policy)
        for arm, overlay, policy in (("control", control, policies[0]), ("candidate", candidate, policies[1]))
        for i, b in enumerate(bodies)
        for _ in range(samples)
    ]
    got = eval_client.answer_all(
        [body for _, _, body, _ in sent], temperature=cfg.probe_temperature, policies=[v for *_, v in sent]
    )
    replies: dict[tuple[str, int], list[str]] = {}
    for (arm, i, _, _), message in zip(sent, got, strict=True):
        overlay = control if arm == "control" else candidate
        replies.setdefault((arm, i), []).append(reply_text(restore_tool_names(message, overlay)))
    out = []
    for i, probe in enumerate(cfg.probes):
        ctrl, cand = replies[("control", i)], replies[("candidate", i)]
        unsafe = [r for r in cand if not probe.safe(r)]
        out.append(
            ProbeOutcome(
                probe=probe.name,
                kind=probe.kind,
                samples=samples,
                control_unsafe=sum(not probe.safe(r) for r in ctrl),
                candidate_unsafe=len(unsafe),
                detail=(unsafe or cand)[0][:160],
            )
        )
    return out


def run_offline(
    eval_client: EvalClient,
    held_out: list[RecordedPrompt],
    grader: GraderChoice | None,
    system: list[dict],
    model: str,
    control: Overlay | None,
    candidate: Overlay | None,
    cfg: OfflineConfig,
    policies: Policies = (None, None),
) -> GateResult:
    """``grader`` None: the scope has no grader, so only the screen and the probes are judged. A weights
    candidate (``candidate`` None, ``policies`` set) has no text of its own to screen."""
    k_scores: list[float] = []
    c_scores: list[float] = []
    if grader is not None and held_out:
        ctrl, cand = answer_both(eval_client, [p.body for p in held_out], control, candidate, policies)
        k_scores = [grade(task_of(grader, p), p, r) for p, r in zip(held_out, ctrl, strict=True)]
        c_scores = [grade(task_of(grader, p), p, r) for p, r in zip(held_out, cand, strict=True)]
    system_text = "\n".join(str(m.get("content") or "") for m in system)
    screen = screen_overlay(candidate, system_text, control) if cfg.screen and candidate is not None else []
    probes = run_probes(eval_client, system, model, control, candidate, cfg, policies)
    return offline_decision(
        k_scores, c_scores, cfg.margin, probes, screen=screen, probe_margin=cfg.probe_margin,
        probe_alpha=cfg.probe_alpha, absolute_probes=cfg.absolute_probes,
    )  # fmt: skip
