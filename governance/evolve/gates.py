"""The gates' decisions, as pure functions of the numbers each gate measured.

Every gate returns a ``GateResult`` (passed or not, the decision, a one-line summary and the numbers),
which the control plane records as a ledger entry before it acts on it.

* replay: only trajectories graded ``deterministic`` or ``approximate`` count as evidence; the others are
  reported with their count, never used. The gate passes with at least ``min_evidence`` counted.
* shadow: the same recorded prompts answered with and without the candidate, graded by the task's grader;
  passes when the candidate's mean beats control's by ``margin`` on at least ``min_prompts`` prompts.
* offline: held-out rewarded trajectories of the scope must not lose more than ``margin`` of mean reward,
  the static screen of the overlay's text must find nothing (``overlay_screen``), and no kind of safety
  probe may regress against control (``probes.compare_probes``).
* canary: the sequential test on live rewards per arm (``governance.evolve.sequential``), overruled by a
  safety metric (the share of failed calls) that is surely worse on the candidate.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from governance.evolve.overlay_screen import ScreenFinding
from governance.evolve.probes import ProbeOutcome, compare_probes
from governance.evolve.sequential import ArmStats, SequentialConfig, SequentialResult, sequential_test

EVIDENCE_GRADES = ("deterministic", "approximate")


class GateResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    gate: str
    passed: bool
    decision: str = Field(description="pass, fail; for the canary: promote, continue, abort, rollback.")
    summary: str
    numbers: dict[str, Any] = Field(default_factory=dict)


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def replay_decision(grades: Mapping[str, int], min_evidence: int) -> GateResult:
    """Count the trajectories whose replay grade makes them evidence; report the rest."""
    counted = {g: int(grades.get(g, 0)) for g in EVIDENCE_GRADES}
    reported = {g: int(n) for g, n in grades.items() if g not in EVIDENCE_GRADES and n}
    total = sum(counted.values())
    passed = total >= min_evidence
    summary = (
        f"{total} trajectories graded deterministic/approximate count as evidence (need {min_evidence})"
        + (f"; not used: {reported}" if reported else "")
    )
    return GateResult(
        gate="replay",
        passed=passed,
        decision="pass" if passed else "fail",
        summary=summary,
        numbers={"counted": counted, "reported_not_used": reported, "evidence": total, "min": min_evidence},
    )


def shadow_decision(
    control: list[float], candidate: list[float], margin: float, min_prompts: int, non_inferior: bool = False
) -> GateResult:
    """Paired scores of the same prompts: the candidate must beat control by ``margin`` on average, or,
    ``non_inferior`` (a trained policy version against the one serving), not fall below it."""
    if len(control) != len(candidate):
        raise ValueError("shadow scores must be paired: one control and one candidate score per prompt")
    n = len(control)
    c_mean, k_mean = _mean(candidate), _mean(control)
    wins = sum(1 for a, b in zip(candidate, control, strict=True) if a > b)
    losses = sum(1 for a, b in zip(candidate, control, strict=True) if a < b)
    gain = None if c_mean is None or k_mean is None else c_mean - k_mean
    if n < min_prompts:
        passed, why = False, f"only {n} graded prompts (need {min_prompts})"
    elif non_inferior and gain is not None and gain >= 0:
        passed, why = True, f"candidate {c_mean:.3f} vs serving {k_mean:.3f}: {gain:+.3f}, not worse"
    elif non_inferior:
        passed, why = False, f"candidate {c_mean:.3f} vs serving {k_mean:.3f}: {gain:+.3f}, worse"
    elif gain is not None and gain >= margin and gain > 0:
        passed, why = True, f"candidate {c_mean:.3f} vs control {k_mean:.3f}: +{gain:.3f} >= {margin}"
    else:
        passed, why = False, f"candidate {c_mean:.3f} vs control {k_mean:.3f}: gain {gain:+.3f} < {margin}"
    return GateResult(
        gate="shadow",
        passed=passed,
        decision="pass" if passed else "fail",
        summary=why,
        numbers={
            "prompts": n,
            "control_mean": k_mean,
            "candidate_mean": c_mean,
            "gain": gain,
            "margin": margin,
            "wins": wins,
            "losses": losses,
        },
    )


def offline_decision(
    control: list[float],
    candidate: list[float],
    margin: float,
    probes: list[ProbeOutcome],
    screen: list[ScreenFinding] = (),  # type: ignore[assignment]
    probe_margin: float = 0.0,
    probe_alpha: float = 0.05,
    absolute_probes: bool = False,
) -> GateResult:
    """Held-out reward must not fall by more than ``margin``; the overlay's text must pass the static
    screen; no kind of safety probe may be unsafe on the candidate more often than on control."""
    c_mean, k_mean = _mean(candidate), _mean(control)
    drop = None if c_mean is None or k_mean is None else k_mean - c_mean
    failed, kinds = compare_probes(probes, probe_margin, probe_alpha, absolute_probes)
    reward_ok = drop is None or drop <= margin
    passed = reward_ok and not failed and not screen
    parts = []
    if drop is None:
        parts.append("no held-out trajectories to regress on")
    else:
        parts.append(f"held-out reward {k_mean:.3f} -> {c_mean:.3f} (drop {drop:+.3f}, allowed {margin})")
    if screen:
        parts.append(
            "the overlay's text fails the safety screen: "
            + "; ".join(f"{f.rule} in {f.where} ({f.match!r})" for f in screen)
        )
    regressed = [k for k, v in kinds.items() if v["regressed"]]
    if failed:
        parts.append(f"probes failed: {failed} (kinds regressed vs control: {regressed})")
    else:
        parts.append(f"no regression on {len(probes)} safety probes vs control")
    return GateResult(
        gate="offline",
        passed=passed,
        decision="pass" if passed else "fail",
        summary="; ".join(parts),
        numbers={
            "held_out": len(control),
            "control_mean": k_mean,
            "candidate_mean": c_mean,
            "drop": drop,
            "margin": margin,
            "screen": [f.model_dump() for f in screen],
            "probes": [p.model_dump() for p in probes],
            "probe_kinds": kinds,
            "probes_failed": failed,
        },
    )


def canary_decision(
    reward: tuple[ArmStats, ArmStats],
    calls_ok: tuple[ArmStats, ArmStats],
    cfg: SequentialConfig,
) -> GateResult:
    """The sequential test on (control, candidate) rewards, and on the share of calls that did not fail.

    A candidate whose reward or whose share of good calls is surely below control's is rolled back; one
    that surely beats control on reward (and is not surely less safe) is promoted.
    """
    test = sequential_test(reward[0], reward[1], cfg)
    safety_cfg = cfg.model_copy(update={"min_effect": 0.0, "final_non_inferiority": None})
    safety = sequential_test(calls_ok[0], calls_ok[1], safety_cfg)
    unsafe = safety.decision == "abort" and (safety.upper is not None and safety.upper < 0)
    if unsafe:
        decision, why = "rollback", f"failed calls rose on the candidate ({safety.reason})"
    elif test.decision == "abort" and test.upper is not None and test.upper < 0:
        decision, why = "rollback", test.reason
    elif test.decision == "abort":
        decision, why = "abort", test.reason
    else:
        decision, why = test.decision, test.reason
    return GateResult(
        gate="canary",
        passed=decision == "promote",
        decision=decision,
        summary=why,
        numbers={"reward": _seq_numbers(test), "calls_ok": _seq_numbers(safety)},
    )


def _seq_numbers(r: SequentialResult) -> dict[str, Any]:
    return {
        "decision": r.decision,
        "control_n": r.control.n,
        "control_mean": r.control.mean,
        "candidate_n": r.candidate.n,
        "candidate_mean": r.candidate.mean,
        "difference": r.difference,
        "lower": r.lower,
        "upper": r.upper,
        "alpha": r.alpha,
        "min_effect": r.min_effect,
    }
