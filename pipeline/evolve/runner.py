"""The loop: drive each proposal through the gates in order, recording every result and decision in the
ledger before the change it makes.

Order: replay check (which recorded trajectories count as evidence), shadow evaluation (on those
trajectories' prompts), offline regression (held-out trajectories and safety probes), canary (an
assignment with a share of traffic, decided by the sequential test on live rewards), and rollback
(automatic when the canary loses to control or its calls fail more; by hand with ``rollback``).

One ``run_pass`` reads the state from the topics (assignments and ledger), advances every running
canary, then takes pending proposals while the limits allow (canaries at once, cool-down after a
rollback in the scope). A gate that fails ends its proposal with a ``reject`` decision. A gate that
could not be decided (its backend failed every retry) is not a failure of the proposal: the ledger
records ``undecided`` with the tries and the error, the proposal stays pending and is gated again on a
later pass, and only after ``limits.max_undecided`` such passes is it dropped (a ``drop`` decision).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pipeline.evolve.backend import EvalBackendError, EvalClient
from pipeline.evolve.entries import PassReport, gate_entry, proposal_entry
from pipeline.evolve.evidence import recorded_prompts, scope_system_prompt, scope_trajectories
from pipeline.evolve.gates.canary import read_canary, start_assignment
from pipeline.evolve.gates.offline import run_offline
from pipeline.evolve.gates.replay import run_replay
from pipeline.evolve.gates.rollback import diff, end_canary, restore
from pipeline.evolve.gates.shadow import run_shadow
from pipeline.evolve.graders import NoGrader, grader_for, per_task_grader
from pipeline.evolve.ledger_state import ProposalState, last_rollback_at, proposal_states
from pipeline.evolve.loop_config import EvolveConfig
from pipeline.evolve.publish import EvolutionPublisher
from pipeline.evolve.weights import (
    end_policy_canary,
    is_weights_candidate,
    on_servers,
    read_policy_canary,
)
from pipeline.evolve.weights_gating import WeightsGating
from sinks.base import StoreClient
from sluice.events import new_id, utcnow
from sluice.evolution import Evidence, LedgerEntry, OverlayAssignment, Proposal, scope_key
from sluice.policy_client import PolicyFleet


class EvolveRunner(WeightsGating):
    def __init__(
        self,
        evolve: EvolveConfig,
        client: StoreClient,
        publisher: EvolutionPublisher,
        eval_client: EvalClient,
        read_entries: Any,
        actor: str = "sluice-evolve",
        fleet: PolicyFleet | None = None,
    ) -> None:
        """``read_entries()`` returns every ledger entry so far (the ledger topic, read whole); ``fleet``:
        the model servers a weights promotion or rollback is carried out on."""
        self.cfg, self.client, self.pub, self.eval = evolve, client, publisher, eval_client
        self._read_entries, self.actor, self.fleet = read_entries, actor, fleet

    # ------------------------------------------------------------------ recording
    def record(self, entry: LedgerEntry) -> LedgerEntry:
        entry = entry.model_copy(update={"actor": self.actor})
        self.pub.record(entry)
        return entry

    def change(self, p: Proposal, kind: str, decision: str, summary: str, before: OverlayAssignment | None,
               build: Any, evidence: dict[str, Any] | None = None) -> OverlayAssignment:  # fmt: skip
        """Record the entry, then publish the assignment it names (``build(entry_id)``)."""
        entry_id = new_id()
        after: OverlayAssignment = build(entry_id)
        self.record(
            proposal_entry(
                p,
                kind,
                decision=decision,
                summary=summary,
                evidence=evidence or {},
                diff=diff(before, after),
                previous_overlay_id=before.active.overlay_id if before and before.active else None,
            ).model_copy(update={"entry_id": entry_id})
        )
        after = after.model_copy(update={"updated_at": utcnow()})  # takes effect now, after its entry
        self.pub.assign(after)
        return after

    def reject(self, p: Proposal, decision: str, why: str, report: PassReport) -> None:
        self.record(proposal_entry(p, "decision", decision=decision, summary=why))
        report.add(p.proposal_id, decision, why)

    def undecided(self, state: ProposalState, gate: str, err: EvalBackendError, report: PassReport) -> None:
        """The gate's backend failed every retry: record it, keep the proposal pending until the limit."""
        p = state.proposal
        n, limit = state.undecided_passes + 1, self.cfg.limits.max_undecided
        evidence = {"gate": gate, "error": str(err), "attempts": err.attempts, "undecided_passes": n,
                    "max_undecided": limit}  # fmt: skip
        why = f"{gate}: the backend failed after {err.attempts} attempt(s): {err}"
        self.record(proposal_entry(p, "decision", gate=gate, decision="undecided", evidence=evidence,
                           summary=f"{why}; pending, undecided pass {n} of {limit}"))  # fmt: skip
        report.add(p.proposal_id, "undecided", f"{why} (pass {n} of {limit})")
        if n >= limit:
            self.record(proposal_entry(p, "decision", gate=gate, decision="drop", evidence=evidence,
                               summary=f"dropped: {gate} undecided on {n} passes, the backend failing"))  # fmt: skip
            report.add(p.proposal_id, "drop", f"{gate} undecided on {n} passes (limit {limit})")
            if is_weights_candidate(p):  # a dropped candidate never serves: it leaves the servers too
                on_servers(self.fleet, "discard", str(p.policy_version))

    # ------------------------------------------------------------------ one pass
    def run_pass(self, now: datetime | None = None) -> PassReport:
        now = now or utcnow()
        report = PassReport()
        assignments = self.pub.read_assignments(self.cfg.ack_timeout_s)
        entries = self._read_entries()
        states = proposal_states(entries)
        running = 0
        for state in states.values():
            if state.status == "canary":
                running += self.advance_canary(state, assignments, report)
        busy = {a.key for a in assignments.values() if a.has_candidate}
        newest = self.set_aside_stale(states, report)
        for state in sorted(states.values(), key=lambda s: s.proposal.created_at):
            if state.status != "pending" or state.proposal.proposal_id in newest.stale:
                continue
            p = state.proposal
            scope = scope_key(p.tenant, p.task_id)
            weights = is_weights_candidate(p)
            if not weights and (p.surface in ("noop", "weights", "rollback") or p.candidate is None):
                why = {
                    "noop": "nothing significant to change",
                    "weights": "the failures span tenants and harnesses, so no overlay of one scope fits: "
                    "the trainer's next candidate version goes through the gates instead",
                }.get(p.surface, "the proposal carries no overlay to try")
                self.reject(p, "hold", why, report)
                continue
            if scope in busy:
                report.add(p.proposal_id, "wait", f"a canary runs in {scope}")
                continue
            if running >= self.cfg.limits.max_canaries:
                report.add(
                    p.proposal_id, "wait", f"{running} canaries run (limit {self.cfg.limits.max_canaries})"
                )
                continue
            last = last_rollback_at(entries, scope)
            cool = timedelta(seconds=self.cfg.limits.cooldown_after_rollback_s)
            if last is not None and now - last < cool:
                report.add(
                    p.proposal_id, "wait", f"cool-down after the rollback in {scope} at {last.isoformat()}"
                )
                continue
            if weights:
                started = newest.last_weights_canary.get(scope)
                gap = self.cfg.limits.weights_min_interval_s
                if started is not None and (now - started).total_seconds() < gap:
                    report.add(
                        p.proposal_id, "wait", f"a weights canary started in {scope} under {gap:g}s ago"
                    )
                    continue
            current = assignments.get(scope)
            if weights:
                started_canary = self.gate_weights(state, current, report, newest.lineages)
            else:
                started_canary = self.gate_proposal(state, current, report)
            if started_canary:
                running += 1
                busy.add(scope)
        return report

    # ------------------------------------------------------------------ gates before the canary
    def gate_proposal(
        self, state: ProposalState, current: OverlayAssignment | None, report: PassReport
    ) -> bool:
        """Replay, shadow, offline; on success start the canary. True when a canary started."""
        p = state.proposal
        assert p.candidate is not None
        control = current.active if current else None
        replay = run_replay(
            self.client, p, self.cfg.limits.min_evidence, limit=4 * self.cfg.shadow.max_prompts
        )
        self.record(gate_entry(p, replay.result, replay.evidence))
        if not replay.result.passed:
            self.reject(p, "reject", f"replay: {replay.result.summary}", report)
            return False
        try:
            grader = grader_for(self.cfg, p.task_id)
        except NoGrader as err:
            self.reject(p, "reject", f"shadow: {err}", report)
            return False
        tool = p.cluster.tool if p.cluster else None  # a tool cluster re-runs the call to its tool
        prompts = recorded_prompts(self.client, p.tenant, replay.counted[: self.cfg.shadow.max_prompts], tool)
        try:
            shadow = run_shadow(self.eval, prompts, grader, control, p.candidate, self.cfg.shadow)
        except EvalBackendError as err:
            self.undecided(state, "shadow", err, report)
            return False
        self.record(
            gate_entry(p, shadow, [Evidence(query="recorded prompts", numbers={"ids": replay.counted_ids})])
        )
        if not shadow.passed:
            self.reject(p, "reject", f"shadow: {shadow.summary}", report)
            return False
        held, ev = scope_trajectories(
            self.client, p.tenant, p.task_id, exclude=replay.counted_ids, rewarded=True,
            limit=self.cfg.offline.held_out,
        )  # fmt: skip
        held_prompts = (
            recorded_prompts(self.client, p.tenant, held, tool) if self.cfg.offline.held_out else []
        )
        system = scope_system_prompt(self.client, p.tenant, p.task_id)
        model = prompts[0].body["model"] if prompts else (self.cfg.eval.model or "")
        try:
            offline = run_offline(
                self.eval, held_prompts, grader, system, model, control, p.candidate, self.cfg.offline
            )
        except EvalBackendError as err:
            self.undecided(state, "offline", err, report)
            return False
        self.record(gate_entry(p, offline, [ev]))
        if not offline.passed:
            self.reject(p, "reject", f"offline: {offline.summary}", report)
            return False
        share = self.cfg.canary.share
        self.change(
            p, "canary", "start", f"canary at {share:.0%} of {scope_key(p.tenant, p.task_id)}", current,
            lambda eid: start_assignment(current, p.proposal_id, p.candidate, share, eid, p.tenant, p.task_id),
        )  # fmt: skip
        report.add(p.proposal_id, "canary", f"share {share}")
        return True

    # ------------------------------------------------------------------ canary and rollback
    def advance_canary(
        self, state: ProposalState, assignments: dict[str, OverlayAssignment], report: PassReport
    ) -> int:
        """Read the arms, decide; returns 1 while the canary keeps running."""
        p = state.proposal
        current = assignments.get(state.scope)
        if current is None or current.proposal_id != p.proposal_id or not current.has_candidate:
            # the assignment moved on (an operator changed it): the canary is over without a decision here
            self.record(
                proposal_entry(
                    p, "decision", decision="abort", summary="the scope's assignment no longer runs it"
                )
            )
            report.add(p.proposal_id, "abort", "assignment changed")
            return 0
        since = state.canary_started_at or utcnow()
        weights = is_weights_candidate(p)
        if weights:  # graded by the task's grader, not by the rewards the traffic posts (those can be gamed)
            result, evidence = read_policy_canary(
                self.client, current, since, self.cfg.canary, per_task_grader(self.cfg)
            )
        else:
            result, evidence = read_canary(self.client, current, since, self.cfg.canary)
        last = next((e for e in reversed(state.entries) if e.kind == "gate" and e.gate == "canary"), None)
        if result.decision == "continue":
            if last is None or last.evidence.get("numbers") != result.numbers:
                self.record(gate_entry(p, result, [evidence]))
            report.add(p.proposal_id, "continue", result.summary)
            return 1
        self.record(gate_entry(p, result, [evidence]))
        promote = result.decision == "promote"
        end = end_policy_canary if weights else end_canary
        kind = "promotion" if promote else "rollback"
        self.change(p, kind, result.decision, result.summary, current, lambda eid: end(current, promote, eid))
        if weights and not promote:  # a turned-down candidate leaves every server (a promoted one is
            # served by its assignment, by name: the servers' default stays the base, so a tenant whose own
            # line is kept apart never gets the pooled one by default)
            on_servers(self.fleet, "discard", str(p.policy_version))
        report.add(p.proposal_id, result.decision, result.summary)
        return 0

    def rollback(self, proposal_id: str, reason: str) -> OverlayAssignment:
        """Undo a proposal by hand: end its canary, or restore the assignment its promotion replaced."""
        states = proposal_states(self._read_entries())
        state = states.get(proposal_id)
        if state is None:
            raise LookupError(f"no proposal {proposal_id} in the ledger")
        p = state.proposal
        current = self.pub.read_assignments(self.cfg.ack_timeout_s).get(state.scope)
        weights = is_weights_candidate(p)
        if state.status == "canary" and current is not None and current.proposal_id == proposal_id:
            end = end_policy_canary if weights else end_canary
            after = self.change(
                p, "rollback", "rollback", reason, current, lambda eid: end(current, False, eid)
            )
            if weights:
                on_servers(self.fleet, "discard", str(p.policy_version))
            return after
        if state.status == "promoted":
            promo = next(e for e in reversed(state.entries) if e.kind == "promotion")
            before = promo.diff.get("before")
            if weights:  # one step back: the version the promotion replaced serves again
                old = OverlayAssignment.model_validate(before) if before else None
                parent = old.active_policy if old else (p.lineage.parent if p.lineage else None)
                after = self.change(
                    p,
                    "rollback",
                    "rollback",
                    reason,
                    current,
                    lambda eid: (current or OverlayAssignment(tenant=p.tenant, task_id=p.task_id)).model_copy(
                        update={"active_policy": parent, "candidate_policy": None, "ledger_entry_id": eid}
                    ),
                )
                on_servers(self.fleet, "discard", str(p.policy_version))
                return after
            return self.change(p, "rollback", "rollback", reason, current,
                               lambda eid: restore(before, p.tenant, p.task_id, eid))  # fmt: skip
        raise LookupError(f"proposal {proposal_id} is {state.status}: it changed nothing to roll back")
