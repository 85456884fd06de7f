"""The weights surface of the control plane's loop: which trained candidate of a scope is gated (the newest
pending one; older ones and descendants of a version the gates turned down are set aside; one whose data
was erased meanwhile never serves), and its replay, shadow and offline gates against the version serving.
The canary, promotion and rollback are the loop's own, with the policy arms of ``pipeline.evolve.weights``.
``EvolveRunner`` takes these methods (it owns the ledger, the store client, the evaluation client and the
policy servers they use).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from pipeline.demo.summary import id_list, rows
from pipeline.evolve.backend import EvalBackendError
from pipeline.evolve.entries import PassReport, gate_entry
from pipeline.evolve.evidence import recorded_prompts, scope_system_prompt, scope_trajectories
from pipeline.evolve.gates.offline import run_offline
from pipeline.evolve.gates.replay import run_replay
from pipeline.evolve.gates.shadow import run_shadow
from pipeline.evolve.graders import NoGrader, per_task_grader
from pipeline.evolve.ledger_state import ProposalState
from pipeline.evolve.weights import (
    audit_rewards,
    is_weights_candidate,
    line_items,
    on_servers,
    replay_regression,
    scope_items,
    serving_default,
    start_policy_canary,
)
from sluice.evolution import Evidence, OverlayAssignment, PolicyLineage, Proposal, scope_key

if TYPE_CHECKING:
    from pipeline.evolve.runner import EvolveRunner

TURNED_DOWN = ("rejected", "rolled_back", "erased")
"""Outcomes that turn a weights candidate's line down: its descendants are set aside. An aborted canary (the
test reached its cap or could not show the asked-for effect, but the candidate was not worse) does not:
the versions trained after it have seen more data and get their own turn at the gates."""


class _Newest(BaseModel):
    """What ``set_aside_stale`` found: the proposals it set aside, per scope the last weights canary, and
    every weights candidate's lineage by version (the reward audit walks a line through its parents)."""

    stale: set[str] = Field(default_factory=set)
    last_weights_canary: dict[str, datetime] = Field(default_factory=dict)
    lineages: dict[str, PolicyLineage] = Field(default_factory=dict)


class WeightsGating:
    """The loop's methods for weights candidates (mixed into ``EvolveRunner``)."""

    # ------------------------------------------------------------------ weights: which candidate
    def set_aside_stale(self: EvolveRunner, states: dict[str, ProposalState], report: PassReport) -> _Newest:
        """Per scope only the newest pending weights candidate is gated: older ones are set aside as
        stale, and so is one whose line descends from a version the gates turned down (``TURNED_DOWN``)."""
        out = _Newest(
            lineages={
                str(s.proposal.policy_version): s.proposal.lineage
                for s in states.values()
                if is_weights_candidate(s.proposal) and s.proposal.lineage is not None
            }
        )
        dead: set[str] = set()
        newest: dict[str, ProposalState] = {}
        for state in sorted(states.values(), key=lambda s: s.proposal.created_at):
            p = state.proposal
            if not is_weights_candidate(p):
                continue
            scope = scope_key(p.tenant, p.task_id)
            if state.canary_started_at is not None:
                last = out.last_weights_canary.get(scope)
                out.last_weights_canary[scope] = max(state.canary_started_at, last or state.canary_started_at)
            if state.status in TURNED_DOWN:
                dead.add(str(p.policy_version))
                continue
            if state.status != "pending":
                continue
            parent = p.lineage.parent if p.lineage else None
            erased = self.erased_in(p)
            if erased:  # trained while its data was being erased: it never serves
                dead.add(str(p.policy_version))
                out.stale.add(p.proposal_id)
                self.reject(p, "erased", f"erased: trained on {erased} erased trajectory version(s)", report)
                on_servers(self.fleet, "discard", str(p.policy_version))
                continue
            if parent in dead:
                dead.add(str(p.policy_version))
                out.stale.add(p.proposal_id)
                self.reject(
                    p, "skip", f"stale: it descends from v{parent}, which the gates turned down", report
                )
                on_servers(self.fleet, "discard", str(p.policy_version))
                continue
            older = newest.get(scope)
            if older is not None:
                out.stale.add(older.proposal.proposal_id)
                self.reject(older.proposal, "skip", f"stale: v{p.policy_version} supersedes it", report)
                on_servers(self.fleet, "discard", str(older.proposal.policy_version))
            newest[scope] = state
        return out

    def erased_in(self: EvolveRunner, p: Proposal) -> int:
        """How many trajectories of the candidate's lineage were erased since it trained."""
        ids = sorted({i.trajectory_id for i in p.lineage.items}) if p.lineage else []
        if not ids:
            return 0
        got = rows(
            self.client,
            f"SELECT count(*) AS n FROM erased_trajectories WHERE trajectory_id IN ({id_list(ids)})",
        )
        return int(got[0]["n"]) if got else 0

    # ------------------------------------------------------------------ weights: the gates
    def gate_weights(
        self: EvolveRunner,
        state: ProposalState,
        current: OverlayAssignment | None,
        report: PassReport,
        lineages: dict[str, PolicyLineage],
    ) -> bool:
        """Replay (evidence, no regression against the parent, and training rewards that agree with the
        task's checker: ``governance.evolve.reward_audit``, over the line's ``lineages``), shadow (not worse than the serving
        version), offline (held-out and safety probes); then the canary. True when a canary started. A
        backend that fails every retry leaves the candidate pending (undecided), never turned down."""
        p = state.proposal
        candidate = str(p.policy_version)
        control = (current.active_policy if current else None) or serving_default(
            self.fleet, p.lineage.parent if p.lineage else None
        )
        policies = (control, candidate)
        replay = run_replay(
            self.client, p, self.cfg.limits.min_evidence, limit=4 * self.cfg.shadow.max_prompts
        )
        grader = per_task_grader(self.cfg)
        # the rewards are audited against the reference the canary trusts: with the posted rewards deciding
        # the canary (weights_reward: posted) the operator trusts their source
        audit = None
        if (
            replay.result.passed
            and self.cfg.reward_audit.enabled
            and self.cfg.canary.weights_reward == "grader"
        ):
            items = line_items(p, lineages, self.cfg.reward_audit.sample)
            seen = {i.trajectory_id for i in items}
            items += scope_items(self.client, p, self.cfg.reward_audit.scope_sample, seen)
            audit = audit_rewards(
                self.client, items, p.tenant, grader, self.cfg.canary, self.cfg.reward_audit
            )
            if audit.decision == "wait":  # its line has too little graded data yet: a newer candidate will
                report.add(p.proposal_id, "wait", audit.summary)
                return False
        try:
            prompts = recorded_prompts(self.client, p.tenant, replay.counted)
            regress = replay_regression(self.eval, prompts, grader, control, candidate, self.cfg.shadow)
            result = replay.result
            if result.passed and regress.numbers.get("prompts"):
                result = result.model_copy(update={
                    "passed": regress.passed, "decision": regress.decision,
                    "summary": f"{result.summary}; deterministic replay: {regress.summary}",
                    "numbers": {**result.numbers, "regression": regress.numbers},
                })  # fmt: skip
            if result.passed and audit is not None:
                result = result.model_copy(update={
                    "passed": audit.passed, "decision": audit.decision,
                    "summary": f"{result.summary}; {audit.summary}",
                    "numbers": {**result.numbers, "reward_audit": audit.numbers},
                })  # fmt: skip
            self.record(gate_entry(p, result, replay.evidence))
            if not result.passed:
                return self.turn_down(p, f"replay: {result.summary}", report)
            shadow = run_shadow(self.eval, prompts, grader, None, None, self.cfg.shadow, policies, True)
            self.record(
                gate_entry(
                    p, shadow, [Evidence(query="recorded prompts", numbers={"ids": replay.counted_ids})]
                )
            )
            if not shadow.passed:
                return self.turn_down(p, f"shadow: {shadow.summary}", report)
            held, ev = scope_trajectories(
                self.client, p.tenant, p.task_id, exclude=replay.counted_ids, rewarded=True,
                limit=self.cfg.offline.held_out,
            )  # fmt: skip
            held_prompts = recorded_prompts(self.client, p.tenant, held) if self.cfg.offline.held_out else []
            system = scope_system_prompt(self.client, p.tenant, p.task_id)
            model = prompts[0].body["model"] if prompts else (self.cfg.eval.model or "")
            offline = run_offline(
                self.eval, held_prompts, grader, system, model, None, None, self.cfg.offline, policies
            )
        except NoGrader as err:
            return self.turn_down(p, f"no grader: {err}", report)
        except EvalBackendError as err:
            self.undecided(state, "weights gates", err, report)
            return False
        self.record(gate_entry(p, offline, [ev]))
        if not offline.passed:
            return self.turn_down(p, f"offline: {offline.summary}", report)
        share = self.cfg.canary.share
        self.change(
            p, "canary", "start", f"weights canary: v{candidate} at {share:.0%} of {scope_key(p.tenant, p.task_id)}"
            f" against v{control}", current,
            lambda eid: start_policy_canary(current, p, control, share, eid),
        )  # fmt: skip
        report.add(p.proposal_id, "canary", f"v{candidate} share {share}")
        return True

    def turn_down(self: EvolveRunner, p: Proposal, why: str, report: PassReport) -> bool:
        """Reject a weights candidate and take it off every server: no request can reach it again."""
        self.reject(p, "reject", why, report)
        on_servers(self.fleet, "discard", str(p.policy_version))
        return False
