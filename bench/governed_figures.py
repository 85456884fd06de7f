"""Figures of ``bench.governed_loop``, from what the run left behind: the ledger (each weights proposal, its
lineage and gate outcomes), DuckDB (which version answered each live step, and when), the checkers (when
each reward was posted, and the true checker's grade of every reply) and the serving process's memory.

Each function is pure over those records, so the figures can be recomputed from a kept run directory.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pipeline.evolve.ledger_state import ProposalState
from pipeline.evolve.weights import is_weights_candidate

BASE_VERSION = "0"  # the weights loaded at start: every tenant's line starts from them


@dataclass(frozen=True)
class Answer:
    """One live reply: whose, which version served it, when, its true grade, when its reward was posted."""

    tenant: str
    trajectory_id: str  # scoped: ``tenant~local-id``, as the ledger's lineage names it
    version: str | None
    answered_at: float
    true_reward: float
    posted_at: float | None


def weights_states(states: Iterable[ProposalState]) -> list[ProposalState]:
    return sorted(
        (s for s in states if is_weights_candidate(s.proposal)), key=lambda s: s.proposal.created_at
    )


def decided_at(state: ProposalState, kind: str) -> datetime | None:
    return next((e.created_at for e in state.entries if e.kind == kind), None)


def candidate_figures(states: list[ProposalState], gamed_source: str) -> dict[str, Any]:
    """Outcome counts per tenant, the harmful candidates (trained on the gamed source) and their fate."""
    harmful = [
        s
        for s in states
        if s.proposal.lineage is not None and gamed_source in s.proposal.lineage.reward_sources
    ]
    gates: Counter[str] = Counter()
    for s in states:
        for e in s.entries:
            if e.kind == "gate" and e.gate != "canary":
                gates[f"{e.gate}:{'pass' if e.passed else 'fail'}"] += 1
            elif e.kind == "gate":
                gates[f"canary:{e.decision}"] += 1
    return {
        "weight_candidates": len(states),
        "weight_promoted": sum(s.status == "promoted" for s in states),
        "weight_rolled_back": sum(s.status == "rolled_back" for s in states),
        "harmful_candidates": len(harmful),
        "harmful_promoted": sum(s.status == "promoted" for s in harmful),
        "harmful_outcomes": dict(Counter(s.status for s in harmful)),
        "outcomes_by_tenant": {
            t: dict(Counter(s.status for s in states if s.proposal.tenant == t))
            for t in sorted({s.proposal.tenant for s in states})
        },
        "gate_outcomes": dict(sorted(gates.items())),
        "promoted_versions": [str(s.proposal.policy_version) for s in states if s.status == "promoted"],
        "canaries": [
            {
                "version": s.proposal.policy_version,
                "status": s.status,
                "summary": next(
                    (e.summary for e in reversed(s.entries) if e.kind in ("promotion", "rollback")), ""
                ),
            }
            for s in states
            if s.canary_started_at is not None
        ],  # fmt: skip
    }


def ungated_served(answers: list[Answer], states: list[ProposalState]) -> tuple[int, dict[str, int]]:
    """Live answers given by a trained version before its canary started (the canary starts only once
    replay, shadow and offline passed it), or by a version the ledger never proposed."""
    started = {str(s.proposal.policy_version): s.canary_started_at for s in states}
    bad: Counter[str] = Counter()
    for a in answers:
        if a.version in (None, BASE_VERSION):
            continue
        at = started.get(a.version)
        if at is None or a.answered_at < at.timestamp():
            bad[a.version] += 1
    return sum(bad.values()), dict(bad)


def reward_to_promoted(answers: list[Answer], states: list[ProposalState]) -> list[float]:
    """Per reward that a promoted version trained on (in its own lineage or an unpromoted ancestor's):
    seconds from the reward's post to that version's promotion, the first promotion that carried it."""
    by_version = {str(s.proposal.policy_version): s for s in states}
    posted = {a.trajectory_id: a.posted_at for a in answers if a.posted_at is not None}
    credited: set[tuple[str, int]] = set()
    out: list[float] = []
    promoted = sorted(
        (s for s in states if s.status == "promoted"),
        key=lambda s: decided_at(s, "promotion") or s.proposal.created_at,
    )
    for s in promoted:
        at = decided_at(s, "promotion")
        node: ProposalState | None = s
        while node is not None and node.proposal.lineage is not None and at is not None:
            for item in node.proposal.lineage.items:
                key = (item.trajectory_id, item.version)
                if key in credited or item.trajectory_id not in posted:
                    continue
                credited.add(key)
                out.append(at.timestamp() - float(posted[item.trajectory_id]))  # type: ignore[arg-type]
            parent = node.proposal.lineage.parent
            node = by_version.get(str(parent)) if parent is not None else None
            if node is not None and node.status == "promoted" and node is not s:
                break  # the rest was carried by that earlier promotion
    return out


def reward_windows(answers: list[Answer], t0: float, budget_s: float, window: float) -> dict[str, Any]:
    """Per tenant: mean true reward in the first and the last ``window`` share of the budget."""
    out: dict[str, Any] = {}
    for tenant in sorted({a.tenant for a in answers}):
        mine = [a for a in answers if a.tenant == tenant]
        start = [a.true_reward for a in mine if a.answered_at < t0 + window * budget_s]
        end = [a.true_reward for a in mine if a.answered_at >= t0 + (1 - window) * budget_s]
        out[tenant] = {
            "answers": len(mine),
            "reward_start": statistics.fmean(start) if start else None,
            "reward_end": statistics.fmean(end) if end else None,
            "answers_start": len(start),
            "answers_end": len(end),
            "reward_all": statistics.fmean(a.true_reward for a in mine) if mine else None,
            "by_version": {
                v: [n, round(statistics.fmean(a.true_reward for a in mine if (a.version or "?") == v), 3)]
                for v, n in sorted(Counter(a.version or "?" for a in mine).items())
            },
        }
    return out


def rss_per_extra_version(samples: list[tuple[int, float]]) -> float | None:
    """Slope of the serving process's RSS (MB) over the count of versions it held (least squares)."""
    if len({n for n, _ in samples}) < 2:
        return None
    fit = statistics.linear_regression([float(n) for n, _ in samples], [mb for _, mb in samples])
    return fit.slope


def p50(values: list[float]) -> float | None:
    return statistics.median(values) if values else None
