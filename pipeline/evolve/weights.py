"""The gates for a trained model policy version: the replay, shadow, offline, canary and rollback that
prove an overlay, with the arms told apart by the policy version the model server answers with.

The live trainer records a weights proposal for every candidate it publishes, with its lineage
(``sluice.evolution.PolicyLineage``). Per scope the newest pending candidate is gated; older pending ones
are set aside as stale (the newer one starts from the same line and has seen more data), and the ledger
says so. The arms:

* control: the version the scope's assignment serves, else the servers' default;
* candidate: the proposal's version, asked for by name (header ``x-sluice-policy-version``).

Where the gates depart from an overlay's: the replay gate also re-runs the scope's deterministic prompts
greedily under both versions and grades them with each prompt's own task (a pooled policy answers
every task); shadow asks that the candidate does not lose to the serving version (an overlay must win
by a margin), since a trained version is meant to serve, not to answer one cluster; the offline gate has
no overlay text to screen, so its held-out regression and safety probes decide. The canary reads each
trajectory's arm from the policy version its steps recorded. A promotion makes the candidate the
scope's active policy and every server's default; a rollback or a rejection discards it from every
server (names are never reused), which also tells the trainer to start again from the promoted one.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from governance.evolve.gates import GateResult, canary_decision, shadow_decision
from governance.evolve.reward_audit import AuditedRow, RewardAuditConfig, audit_decision
from governance.evolve.sequential import ArmStats
from pipeline.demo.summary import rows
from pipeline.evolve.backend import EvalClient, reply_text
from pipeline.evolve.evidence import RecordedPrompt, recorded_prompts, scope_trajectories
from pipeline.evolve.gates.canary import arm_outcomes
from pipeline.evolve.graders import GraderChoice, NoGrader, grade, task_of
from pipeline.evolve.loop_config import CanaryConfig, ShadowConfig
from sinks.base import StoreClient
from sinks.views import quote_literal
from sluice.events import Trajectory
from sluice.evolution import ALL_TENANTS, Evidence, LineageItem, OverlayAssignment, PolicyLineage, Proposal
from sluice.policy_client import PolicyFleet, PolicyStatus

log = logging.getLogger("sluice.evolve.weights")


def is_weights_candidate(p: Proposal) -> bool:
    """A trained version to prove (the trainer's), not a diagnosis that only says weights would help."""
    return p.surface == "weights" and bool(p.policy_version)


def serving_default(fleet: PolicyFleet | None, fallback: str | None) -> str | None:
    """The version the servers answer with when a request names none (the first reachable server's)."""
    if fleet is None:
        return fallback
    for status in fleet.status().values():
        if isinstance(status, PolicyStatus):
            return status.serving_version
    return fallback


def replay_regression(
    eval_client: EvalClient,
    prompts: list[RecordedPrompt],
    grader: GraderChoice,
    parent: str | None,
    candidate: str,
    cfg: ShadowConfig,
) -> GateResult:
    """The deterministic recorded prompts re-run greedily under the parent and the candidate, each
    graded by its task's checker: the candidate must not do worse than its parent."""
    chosen = [p for p in prompts if p.replay_grade == "deterministic"][: cfg.max_prompts]
    bodies = [p.body for p in chosen]
    got = eval_client.answer_all(
        bodies + bodies, temperature=0.0, policies=[parent] * len(bodies) + [candidate] * len(bodies)
    )
    n = len(chosen)
    k = [grade(task_of(grader, p), p, reply_text(m)) for p, m in zip(chosen, got[:n], strict=True)]
    c = [grade(task_of(grader, p), p, reply_text(m)) for p, m in zip(chosen, got[n:], strict=True)]
    result = shadow_decision(k, c, 0.0, min(cfg.min_prompts, max(1, n)), non_inferior=True)
    return result.model_copy(update={"gate": "replay"})


def line_items(p: Proposal, lineages: dict[str, PolicyLineage], want: int) -> list[LineageItem]:
    """Up to ``want`` rewarded trajectories the candidate's line trained on, newest first: its own, then
    its parent's and so on (each version's lineage holds only its direct data)."""
    out: list[LineageItem] = []
    lineage, seen = p.lineage, set()
    while lineage is not None and len(out) < want and lineage.version not in seen:
        seen.add(lineage.version)
        out += [i for i in reversed(lineage.items) if i.reward is not None][: want - len(out)]
        lineage = lineages.get(str(lineage.parent)) if lineage.parent else None
    return out


def scope_items(client: StoreClient, p: Proposal, want: int, skip: set[str]) -> list[LineageItem]:
    """The scope's newest rewarded trajectories (not in ``skip``), as audit rows of the rewards posted."""
    if want <= 0:
        return []
    found, _ = scope_trajectories(client, p.tenant, p.task_id, rewarded=True, limit=want + len(skip))
    rows_ = [r for r in found if r["trajectory_id"] not in skip][:want]
    return [LineageItem(trajectory_id=r["trajectory_id"], version=0, tenant=r.get("tenant") or p.tenant,
                        reward=r["reward"], reward_sources=["posted to the scope"]) for r in rows_]  # fmt: skip


def audit_rewards(
    client: StoreClient,
    items: list[LineageItem],
    tenant: str,
    grader: GraderChoice,
    canary: CanaryConfig,
    cfg: RewardAuditConfig,
) -> GateResult:
    """Each lineage trajectory's recorded final answer graded by the task's checker against the reward the
    trainer used (``governance.evolve.reward_audit``)."""
    span = canary.reward_max - canary.reward_min
    by_id = {i.trajectory_id: i for i in items if i.reward is not None}
    found = [{"trajectory_id": i.trajectory_id, "tenant": i.tenant} for i in by_id.values()]
    audited = []
    for prompt in recorded_prompts(client, tenant, found) if found and span > 0 else []:
        item = by_id[prompt.trajectory.trajectory_id]
        answer = final_answer(prompt.trajectory)
        if answer is None:
            continue
        try:
            graded = grade(task_of(grader, prompt), prompt, answer)
        except NoGrader:  # no checker for this task: not evidence either way
            continue
        posted = min(1.0, max(0.0, (float(item.reward or 0.0) - canary.reward_min) / span))
        audited.append(
            AuditedRow(
                trajectory_id=item.trajectory_id,
                posted=posted,
                graded=min(1.0, max(0.0, graded)),
                sources=tuple(item.reward_sources),
            )
        )
    return audit_decision(audited, cfg)


def policy_outcomes_sql(a: OverlayAssignment, since: datetime, cfg: CanaryConfig) -> str:
    """Per arm of a weights canary: trajectories, those without a failed call, rewarded ones and their
    reward sum, each trajectory's arm read from the policy version its steps were answered by."""
    span = cfg.reward_max - cfg.reward_min
    if span <= 0:
        raise ValueError("evolve.canary.reward_max must be above reward_min")
    cond = f"created_at >= TIMESTAMPTZ {quote_literal(since.isoformat())}"
    if a.tenant != ALL_TENANTS:
        cond += f" AND tenant = {quote_literal(a.tenant)}"
    if a.task_id is not None:
        cond += f" AND task_id = {quote_literal(a.task_id)}"
    cand = quote_literal(a.candidate_policy or "")
    ctrl = quote_literal(a.active_policy or "")
    return f"""
        WITH arms AS (
            SELECT trajectory_id,
                   any_value(CASE WHEN model_version = {cand} THEN 'candidate' ELSE 'control' END) AS arm,
                   bool_or(error IS NOT NULL OR coalesce(status_code, 200) >= 400) AS failed
            FROM steps
            WHERE {cond} AND model_version IN ({cand}, {ctrl})
            GROUP BY trajectory_id)
        SELECT a.arm, count(*) AS trajectories, count(*) FILTER (WHERE NOT a.failed) AS calls_ok,
               count(t.reward) FILTER (WHERE t.rewarded) AS rewarded,
               coalesce(sum(least(1.0, greatest(0.0, (t.reward - {cfg.reward_min}) / {span})))
                        FILTER (WHERE t.rewarded AND t.reward IS NOT NULL), 0.0) AS reward_sum
        FROM arms a LEFT JOIN trajectories t USING (trajectory_id)
        GROUP BY a.arm ORDER BY a.arm"""


def policy_arms_sql(a: OverlayAssignment, since: datetime) -> str:
    """Each landed trajectory of a weights canary with its arm and whether any of its calls failed."""
    cond = f"s.created_at >= TIMESTAMPTZ {quote_literal(since.isoformat())}"
    if a.tenant != ALL_TENANTS:
        cond += f" AND s.tenant = {quote_literal(a.tenant)}"
    if a.task_id is not None:
        cond += f" AND s.task_id = {quote_literal(a.task_id)}"
    cand, ctrl = quote_literal(a.candidate_policy or ""), quote_literal(a.active_policy or "")
    return f"""
        SELECT s.trajectory_id, any_value(t.tenant) AS tenant,
               any_value(CASE WHEN s.model_version = {cand} THEN 'candidate' ELSE 'control' END) AS arm,
               bool_or(s.error IS NOT NULL OR coalesce(s.status_code, 200) >= 400) AS failed
        FROM steps s JOIN trajectories t USING (trajectory_id)
        WHERE {cond} AND s.model_version IN ({cand}, {ctrl})
        GROUP BY s.trajectory_id ORDER BY s.trajectory_id"""


def graded_arms(
    client: StoreClient, a: OverlayAssignment, since: datetime, grader: GraderChoice
) -> tuple[dict[str, tuple[ArmStats, ArmStats]], Evidence]:
    """Per arm: each ended trajectory's final answer graded by its task's grader, and its calls."""
    sql = policy_arms_sql(a, since)
    found = rows(client, sql)
    prompts = {p.trajectory.trajectory_id: p for p in recorded_prompts(client, a.tenant, found)}
    scores: dict[str, list[float]] = {"control": [], "candidate": []}
    calls: dict[str, list[float]] = {"control": [], "candidate": []}
    for r in found:
        calls[r["arm"]].append(0.0 if r["failed"] else 1.0)
        prompt = prompts.get(r["trajectory_id"])
        answer = final_answer(prompt.trajectory) if prompt is not None else None
        if prompt is None or answer is None:
            continue
        try:
            scores[r["arm"]].append(grade(task_of(grader, prompt), prompt, answer))
        except NoGrader:  # a task with no grader configured is not evidence either way
            continue
    out = {arm: (ArmStats.of(scores[arm]), ArmStats.of(calls[arm])) for arm in scores}
    numbers = {arm: {"graded": len(scores[arm]), "mean": out[arm][0].mean, "trajectories": len(calls[arm])}
               for arm in scores}  # fmt: skip
    return out, Evidence(query=" ".join(sql.split()), numbers={**numbers, "reward": "grader"})


def final_answer(trajectory: Trajectory) -> str | None:
    """The text (else the tool calls) of the trajectory's last model answer."""
    for step in sorted(trajectory.steps, key=lambda s: s.step_index, reverse=True):
        if step.action.choices:
            return reply_text(step.action.choices[0].message.model_dump(mode="json", exclude_none=True))
    return None


def read_policy_canary(
    client: StoreClient,
    a: OverlayAssignment,
    since: datetime,
    cfg: CanaryConfig,
    grader: GraderChoice | None = None,
) -> tuple[GateResult, Evidence]:
    """The sequential test on each arm's outcomes: graded by the task's grader (``cfg.weights_reward``
    grader, when one is given), else the posted rewards."""
    if cfg.weights_reward == "grader" and grader is not None:
        arms, evidence = graded_arms(client, a, since, grader)
        (k_reward, k_calls), (c_reward, c_calls) = arms["control"], arms["candidate"]
    else:
        arms, evidence = arm_outcomes(client, policy_outcomes_sql(a, since, cfg))
        (k_reward, k_calls), (c_reward, c_calls) = arms["control"], arms["candidate"]
        evidence = evidence.model_copy(update={"numbers": {**evidence.numbers, "reward": "posted"}})
    test = cfg.test.model_copy(update={"final_non_inferiority": cfg.weights_non_inferiority})
    result = canary_decision((k_reward, c_reward), (k_calls, c_calls), test)
    return result, evidence


def start_policy_canary(
    current: OverlayAssignment | None, p: Proposal, control: str | None, share: float, entry_id: str
) -> OverlayAssignment:
    """The scope's assignment with the candidate version added at ``share`` (overlays unchanged)."""
    base: dict[str, Any] = current.model_dump() if current is not None else {}
    base.pop("event_id", None)
    base.pop("updated_at", None)
    return OverlayAssignment.model_validate(
        {
            **base,
            "tenant": p.tenant,
            "task_id": p.task_id,
            "active_policy": control,
            "candidate_policy": p.policy_version,
            "canary_share": share,
            "proposal_id": p.proposal_id,
            "ledger_entry_id": entry_id,
        }
    )


def end_policy_canary(current: OverlayAssignment, promote: bool, entry_id: str) -> OverlayAssignment:
    """The assignment without the candidate version; promoted, it is the active policy."""
    return current.model_copy(
        update={
            "active_policy": current.candidate_policy if promote else current.active_policy,
            "candidate_policy": None,
            "candidate": None,
            "canary_share": 0.0,
            "ledger_entry_id": entry_id,
        }
    )


def on_servers(fleet: PolicyFleet | None, action: str, version: str) -> dict[str, Any]:
    """Promote or discard ``version`` on every policy server; per server what happened (never raises:
    a server that is away catches up from the assignment, which is what the proxy routes by)."""
    if fleet is None or not version:
        return {}
    try:
        res = fleet.promote(version) if action == "promote" else fleet.discard(version)
    except Exception as err:  # the ledger records it; the pass goes on
        log.warning("policy servers: %s %s failed: %s", action, version, err)
        return {"error": f"{type(err).__name__}: {err}"}
    return {"ok": sorted(res.replies), "errors": {u: str(e) for u, e in res.errors.items()}}
