"""Which weights candidates the loop still gates, over a real ledger topic: only the newest of a scope, and
none whose line the gates turned down; an inconclusive (aborted) canary does not turn its line down."""

from __future__ import annotations

from app.config import SluiceConfig
from pipeline.evolve.entries import PassReport
from pipeline.evolve.ledger_state import proposal_states, read_ledger
from pipeline.evolve.publish import EvolutionPublisher
from pipeline.evolve.runner import EvolveRunner
from sluice.evolution import LedgerEntry, PolicyLineage, Proposal
from trainers.live.lineage import weights_proposal


def propose(pub: EvolutionPublisher, version: str, parent: str, scope: str) -> Proposal:
    p = weights_proposal(PolicyLineage(version=version, parent=parent, scope=scope, samples=4))
    pub.record(
        LedgerEntry(proposal_id=p.proposal_id, kind="proposal", surface="weights", tenant=p.tenant,
                    policy_version=version, diff={"proposal": p.model_dump(mode="json")}, actor=p.proposer)
    )  # fmt: skip
    return p


def decide(pub: EvolutionPublisher, p: Proposal, kind: str, decision: str) -> None:
    pub.record(LedgerEntry(proposal_id=p.proposal_id, kind=kind, surface="weights", tenant=p.tenant,
                           policy_version=p.policy_version, decision=decision))  # fmt: skip


def test_only_a_line_turned_down_is_set_aside_not_one_after_an_inconclusive_canary(
    config: SluiceConfig,
) -> None:
    pub = EvolutionPublisher(config.broker, config.topics, 15)
    try:
        inconclusive = propose(pub, "acme.2", "0", "acme")
        decide(pub, inconclusive, "canary", "start")
        decide(pub, inconclusive, "rollback", "abort")  # the test reached its cap: not worse, not better
        after_abort = propose(pub, "acme.4", "acme.2", "acme")
        refused = propose(pub, "globex.2", "0", "globex")
        decide(pub, refused, "decision", "reject")  # shadow: it lost to the serving version
        after_reject = propose(pub, "globex.4", "globex.2", "globex")
        older = propose(pub, "initech.1", "0", "initech")
        newest = propose(pub, "initech.3", "initech.1", "initech")

        def entries() -> list[LedgerEntry]:
            return read_ledger(config.broker, config.topics, 15)

        runner = EvolveRunner(config.evolve, None, pub, None, entries)  # type: ignore[arg-type]
        found = runner.set_aside_stale(proposal_states(entries()), PassReport())
        assert found.stale == {after_reject.proposal_id, older.proposal_id}
        states = proposal_states(entries())
        assert states[after_abort.proposal_id].status == "pending"
        assert states[newest.proposal_id].status == "pending"
        assert states[inconclusive.proposal_id].status == "aborted"
        skip = [e for e in states[after_reject.proposal_id].entries if e.decision == "skip"]
        assert len(skip) == 1 and "globex.2" in skip[0].summary
        assert (
            "supersedes" in [e for e in states[older.proposal_id].entries if e.decision == "skip"][0].summary
        )
    finally:
        pub.close()
