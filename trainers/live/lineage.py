"""Every policy version knows its data: the lineage of a trained version, and its record in the ledger.

``build_lineage`` (pure) turns the rows one update trained on into a ``PolicyLineage``: each trajectory
version with its tenant, training rows, reward and reward sources, and totals per tenant and per source.
The parent's lineage holds the rest, so a version's whole data is the union along its parents.

``UnpublishedRows`` keeps, per scope, what the next published version will have trained on since its
parent: every update's rows when a version is published every few updates (``live.push_every``), none of
the rows whose weights a turned-down line took with it.

``LineageLedger`` records it on the ledger topic before the version can serve any request:

* ``trainer.promotion: gated``: a weights *proposal* that the control plane's gates take up, scoped to
  the tenant of an own learning scope (``*`` for the shared one); the candidate serves nothing until they
  promote it;
* ``direct``: the same proposal, then a ``promotion`` entry with the decision ``ungated``, so the ledger
  says plainly that no gate looked at it. A direct version of an own scope is then routed to its tenant
  (``route``: the tenant's assignment names it as the active policy).

The sink stores the ledger, and ``policy_lineage`` (a view over it) is what ``sluice query`` and erasure read.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Literal

from pipeline.evolve.exceptions import PublishError
from pipeline.evolve.publish import EvolutionPublisher
from sluice.broker_config import BrokerConfig
from sluice.evolution import (
    SHARED_SCOPE,
    LedgerEntry,
    LineageItem,
    OverlayAssignment,
    PolicyLineage,
    Proposal,
    scope_key,
    scope_tenant,
)
from sluice.topics_config import TopicsConfig
from trainers.live.samples import LiveRow

log = logging.getLogger("sluice.trainer.lineage")
PROPOSER = "sluice-trainer"


def build_lineage(
    rows: list[LiveRow],
    version: str,
    parent: str | None,
    promotion: Literal["gated", "direct"] = "gated",
    scope: str = SHARED_SCOPE,
    rebuild_of: list[str] | None = None,
) -> PolicyLineage:
    """The lineage of the version one update made from ``rows`` (its parent's lineage holds the rest)."""
    items: dict[tuple[str, int], LineageItem] = {}
    tenants: Counter[str] = Counter()
    sources: Counter[str] = Counter()
    for row in rows:
        s = row.sample
        key = (s.trajectory_id, s.version)
        item = items.get(key)
        if item is None:
            items[key] = LineageItem(
                trajectory_id=s.trajectory_id, version=s.version, tenant=s.tenant, samples=1, reward=s.reward,
                reward_sources=list(s.reward_sources),
            )  # fmt: skip
        else:
            items[key] = item.model_copy(update={"samples": item.samples + 1})
        tenants[s.tenant] += 1
        for source in s.reward_sources or ["unknown"]:
            sources[source] += 1
    return PolicyLineage(
        version=version,
        parent=parent,
        scope=scope,
        promotion=promotion,
        rebuild_of=list(rebuild_of or []),
        items=sorted(items.values(), key=lambda i: (i.trajectory_id, i.version)),
        samples=len(rows),
        tenants=dict(tenants),
        reward_sources=dict(sources),
    )


class UnpublishedRows:
    """Per learning scope, the rows trained since its last published version."""

    def __init__(self) -> None:
        self.rows: dict[str, list[LiveRow]] = {}

    def trained(self, scope: str, rows: list[LiveRow], reset: bool = False) -> None:
        """An update of ``scope`` trained ``rows``; ``reset``: it first went back to a kept version, so the
        rows trained since the last push left with the refused weights."""
        if reset:
            self.rows.pop(scope, None)
        self.rows.setdefault(scope, []).extend(rows)

    def since_parent(self, scope: str) -> list[LiveRow]:
        return list(self.rows.get(scope, []))

    def published(self, scope: str) -> None:
        self.rows.pop(scope, None)


def weights_proposal(lineage: PolicyLineage) -> Proposal:
    n = len(lineage.items)
    return Proposal(
        surface="weights",
        tenant=scope_tenant(lineage.scope),
        policy_version=lineage.version,
        lineage=lineage,
        rationale=f"policy v{lineage.version} trained from v{lineage.parent} on {lineage.samples} rows of {n} "
        f"trajectory versions ({', '.join(f'{t}: {c}' for t, c in sorted(lineage.tenants.items()))})",
        proposer=PROPOSER,
    )


class LineageLedger:
    """Records each trained version's proposal and lineage on the ledger topic (and, ``direct``, that it
    serves ungated). Entries the broker did not acknowledge wait, in order, for the next call; a version
    whose entries are not all recorded is not pushed (nothing serves without its ledger entry)."""

    def __init__(self, broker: BrokerConfig, topics: TopicsConfig, timeout_s: float = 30.0) -> None:
        self.pub = EvolutionPublisher(broker, topics, timeout_s)
        self.unrecorded: list[LedgerEntry] = []

    def record(self, lineage: PolicyLineage) -> bool:
        """True once every entry so far is acknowledged: only then may the version be pushed."""
        p = weights_proposal(lineage)
        entries = [
            LedgerEntry(
                proposal_id=p.proposal_id,
                kind="proposal",
                surface="weights",
                tenant=p.tenant,
                policy_version=p.policy_version,
                summary=p.rationale,
                actor=PROPOSER,
                evidence={
                    "proposer": PROPOSER,
                    "samples": lineage.samples,
                    "tenants": lineage.tenants,
                    "reward_sources": lineage.reward_sources,
                },
                diff={"proposal": p.model_dump(mode="json")},
            )  # fmt: skip
        ]
        if lineage.promotion == "direct":
            entries.append(
                LedgerEntry(
                    proposal_id=p.proposal_id,
                    kind="promotion",
                    surface="weights",
                    tenant=p.tenant,
                    policy_version=p.policy_version,
                    decision="ungated",
                    actor=PROPOSER,
                    summary="trainer.promotion is direct: served to every request without a gate",
                )  # fmt: skip
            )
        self.unrecorded.extend(entries)
        return self.flush()

    def route(self, lineage: PolicyLineage) -> None:
        """Serve a direct own-scope version to its tenant: its assignment (overlays kept) names it."""
        tenant = scope_tenant(lineage.scope)
        try:
            current = self.pub.read_assignments(self.pub.timeout_s).get(scope_key(tenant, None))
            base = current or OverlayAssignment(tenant=tenant)
            self.pub.assign(base.model_copy(update={"active_policy": lineage.version}))
        except PublishError as err:
            log.warning("%s not routed to %s yet: %s", lineage.version, tenant, err)

    def flush(self) -> bool:
        while self.unrecorded:
            try:
                self.pub.record(self.unrecorded[0])
            except PublishError as err:
                log.warning("lineage not recorded yet (%d entries waiting): %s", len(self.unrecorded), err)
                return False
            self.unrecorded.pop(0)
        return True

    def close(self) -> None:
        self.pub.close()
