"""Reward audit: do the rewards a trained policy version learned from agree with the task's own checker?

A weights candidate is trained on the rewards its scope's traffic posted. Those can come from a source that
can be gamed (a grader paying for a keyword, a thumbs-up that rewards flattery), and a policy trained on
them learns the game. The canary judges live answers by the task's checker, but a candidate trained on a
gamed reward can still look better there for a while (the game and the task overlap early on), so the
reward itself is audited before any request is served: a sample of the trajectories in the candidate's
lineage have their recorded final answer graded by the task's checker, and each graded score is compared
with the reward the trainer used (both on [0, 1]); a version's lineage holds only its direct data, so the
sample reaches back through its parents, and the scope's newest rewarded trajectories join it: training
keeps only the groups whose rewards differ, and those are where a gamed source and the checker agree most
(a grader paying for a keyword rewards the keyword's own records right), so the source is judged on the
traffic it rewards as well. The candidate passes when at least ``min_agreement`` of them
agree within ``tolerance``. With some graded but fewer than ``min_rows`` the audit waits (the candidate
stays pending, and a newer one of the line brings more data); with none gradable (no checker for the
task) it cannot audit, says so, and leaves the decision to the other gates.

Agreement is also reported per reward source, so the ledger names the source that disagrees.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from governance.evolve.gates import GateResult
from sluice.frozen import Frozen


class RewardAuditConfig(Frozen):
    enabled: bool = Field(
        True, description="Audit a weights candidate's training rewards against the task's checker."
    )
    sample: int = Field(32, ge=1, description="Lineage trajectories graded per candidate (newest first).")
    scope_sample: int = Field(
        32,
        ge=0,
        description="The scope's newest rewarded trajectories graded too: the reward source is audited on "
        "the traffic it rewards, not only on the rows training kept (GRPO keeps only groups whose rewards "
        "differ, which is where a gamed source and the checker agree most).",
    )
    min_rows: int = Field(
        8, ge=1, description="Fewer graded than this (but some): the candidate waits for more of its line."
    )
    tolerance: float = Field(
        0.25, ge=0, le=1, description="A posted reward within this of the checker's score agrees with it."
    )
    min_agreement: float = Field(
        0.8, ge=0, le=1, description="Share of graded trajectories that must agree for the candidate to pass."
    )


class AuditedRow(BaseModel):
    """One lineage trajectory: the reward the trainer used and the checker's score, both on [0, 1]."""

    model_config = ConfigDict(frozen=True)

    trajectory_id: str
    posted: float = Field(ge=0, le=1)
    graded: float = Field(ge=0, le=1)
    sources: tuple[str, ...] = ()


def audit_decision(audited: list[AuditedRow], cfg: RewardAuditConfig) -> GateResult:
    """Pass when the posted rewards agree with the checker on at least ``min_agreement`` of the rows."""
    n = len(audited)
    agree = [abs(r.posted - r.graded) <= cfg.tolerance for r in audited]
    by_source: dict[str, list[bool]] = defaultdict(list)
    for row, ok in zip(audited, agree, strict=True):
        for source in row.sources or ("unnamed",):
            by_source[source].append(ok)
    sources = {s: {"rows": len(v), "agreement": round(sum(v) / len(v), 3)} for s, v in by_source.items()}
    numbers: dict[str, Any] = {
        "graded": n,
        "min_rows": cfg.min_rows,
        "tolerance": cfg.tolerance,
        "min_agreement": cfg.min_agreement,
        "by_source": sources,
    }
    if n == 0:
        why = "reward audit: no training trajectory could be graded by a task checker; not audited"
        return GateResult(gate="replay", passed=True, decision="pass", summary=why, numbers=numbers)
    if n < cfg.min_rows:
        why = (
            f"reward audit: only {n} training trajectories graded by the task's checker (need {cfg.min_rows})"
        )
        return GateResult(gate="replay", passed=False, decision="wait", summary=why, numbers=numbers)
    share = sum(agree) / n
    numbers["agreement"] = round(share, 3)
    worst = min(sources.items(), key=lambda kv: kv[1]["agreement"])
    if share >= cfg.min_agreement:
        why = f"reward audit: posted rewards agree with the task's checker on {share:.0%} of {n} (need {cfg.min_agreement:.0%})"
        return GateResult(gate="replay", passed=True, decision="pass", summary=why, numbers=numbers)
    why = (
        f"reward audit: posted rewards agree with the task's checker on only {share:.0%} of {n} training "
        f"trajectories (need {cfg.min_agreement:.0%}); source {worst[0]!r} agrees on {worst[1]['agreement']:.0%}"
    )
    return GateResult(gate="replay", passed=False, decision="fail", summary=why, numbers=numbers)
