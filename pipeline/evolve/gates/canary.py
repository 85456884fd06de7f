"""Canary: the assignment that gives the candidate a share of the scope's trajectories, and the reading
of live outcomes per arm that the sequential test decides on.

Each arm's outcomes are read from the steps the proxy attributed to it (``overlay_arm``, ``overlay_id``)
since the canary started, joined to the latest version of their trajectories: a reward per rewarded
trajectory, and whether any of its calls failed (the safety metric). Both arms are read over the same
window, so traffic the control overlay served before the canary never weighs in.
"""

from __future__ import annotations

from datetime import datetime

from governance.evolve.gates import GateResult, canary_decision
from governance.evolve.sequential import ArmStats
from pipeline.demo.summary import rows
from pipeline.evolve.loop_config import CanaryConfig
from sinks.base import StoreClient
from sinks.views import quote_literal
from sluice.evolution import Evidence, OverlayAssignment


def start_assignment(
    current: OverlayAssignment | None, proposal_id: str, candidate, share: float, entry_id: str, tenant: str,
    task_id: str | None,
) -> OverlayAssignment:  # fmt: skip
    """The scope's assignment with the candidate added at ``share`` (the control arm unchanged)."""
    return OverlayAssignment(
        tenant=tenant,
        task_id=task_id,
        active=current.active if current else None,
        candidate=candidate,
        canary_share=share,
        proposal_id=proposal_id,
        ledger_entry_id=entry_id,
    )


def outcomes_sql(a: OverlayAssignment, since: datetime, cfg: CanaryConfig) -> str:
    span = cfg.reward_max - cfg.reward_min
    if span <= 0:
        raise ValueError("evolve.canary.reward_max must be above reward_min")
    cond = (
        f"tenant = {quote_literal(a.tenant)} AND created_at >= TIMESTAMPTZ {quote_literal(since.isoformat())}"
    )
    if a.task_id is not None:
        cond += f" AND task_id = {quote_literal(a.task_id)}"
    cand = quote_literal(a.candidate.overlay_id) if a.candidate else "NULL"
    ctrl = f"= {quote_literal(a.active.overlay_id)}" if a.active else "IS NULL"
    return f"""
        WITH arms AS (
            SELECT trajectory_id, any_value(overlay_arm) AS arm,
                   bool_or(error IS NOT NULL OR coalesce(status_code, 200) >= 400) AS failed
            FROM steps
            WHERE {cond} AND ((overlay_arm = 'candidate' AND overlay_id = {cand})
                              OR (overlay_arm = 'control' AND overlay_id {ctrl}))
            GROUP BY trajectory_id)
        SELECT a.arm, count(*) AS trajectories, count(*) FILTER (WHERE NOT a.failed) AS calls_ok,
               count(t.reward) FILTER (WHERE t.rewarded) AS rewarded,
               coalesce(sum(least(1.0, greatest(0.0, (t.reward - {cfg.reward_min}) / {span})))
                        FILTER (WHERE t.rewarded AND t.reward IS NOT NULL), 0.0) AS reward_sum
        FROM arms a LEFT JOIN trajectories t USING (trajectory_id)
        GROUP BY a.arm ORDER BY a.arm"""


def arm_outcomes(client: StoreClient, sql: str) -> tuple[dict[str, tuple[ArmStats, ArmStats]], Evidence]:
    """Per arm, from an outcomes query (``outcomes_sql`` or a weights canary's): (rewards, good calls)."""
    got = {r["arm"]: r for r in rows(client, sql)}
    out = {}
    for name in ("control", "candidate"):
        r = got.get(name) or {}
        reward = ArmStats(n=int(r.get("rewarded") or 0), total=float(r.get("reward_sum") or 0.0))
        calls = ArmStats(n=int(r.get("trajectories") or 0), total=float(r.get("calls_ok") or 0))
        out[name] = (reward, calls)
    return out, Evidence(query=" ".join(sql.split()), numbers={arm: dict(r) for arm, r in got.items()})


def read_canary(
    client: StoreClient, a: OverlayAssignment, since: datetime, cfg: CanaryConfig
) -> tuple[GateResult, Evidence]:
    arms, evidence = arm_outcomes(client, outcomes_sql(a, since, cfg))
    (k_reward, k_calls), (c_reward, c_calls) = arms["control"], arms["candidate"]
    result = canary_decision((k_reward, c_reward), (k_calls, c_calls), cfg.test)
    return result, evidence
