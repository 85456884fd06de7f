"""Per-tenant policies in a real DuckDB file, from the ledger the control plane and the trainer write: the
version each tenant is served now (its own scope's promoted one, else the shared one, else the default),
that version's lineage as the tenant's share of it, and its reward by version; a tenant's key reads its
own row only."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from pipeline.evolve.gates.rollback import diff
from pipeline.evolve.weights import end_policy_canary, start_policy_canary
from sinks.flatten import SourceRecord
from sinks.principal import Principal
from sinks.store import DuckDBStore
from sluice.events import Trajectory, encode, utcnow
from sluice.evolution import LedgerEntry, LineageItem, OverlayAssignment, PolicyLineage, Proposal
from testing.samples import make_trajectory
from tests.sinks.test_evolution_ledger import ledger_records, rows, write
from trainers.live.lineage import weights_proposal

T0 = utcnow()


def served_by(t: Trajectory, version: str, later: timedelta = timedelta(0)) -> Trajectory:
    """``t`` as served by ``version``, its steps ``later`` than the sample's fixed clock."""
    steps = [s.model_copy(update={"created_at": s.created_at + later,
                                  "metadata": s.metadata.model_copy(update={"model_version": version})})
             for s in t.steps]  # fmt: skip
    return t.model_copy(
        update={"steps": steps, "first_step_at": steps[0].created_at, "ended_at": steps[-1].created_at}
    )


def proposal(version: str, scope: str, items: list[tuple[str, str]]) -> Proposal:
    lineage = PolicyLineage(
        version=version,
        parent="0",
        scope=scope,
        items=[LineageItem(trajectory_id=tid, version=1, tenant=tenant) for tenant, tid in items],
        samples=len(items),
    )
    return weights_proposal(lineage)


def entry(p: Proposal, kind: str, at: int, **kw: object) -> LedgerEntry:
    return LedgerEntry(
        proposal_id=p.proposal_id,
        kind=kind,  # type: ignore[arg-type]
        surface="weights",
        tenant=p.tenant,
        policy_version=p.policy_version,
        created_at=T0 + timedelta(seconds=at),
        **kw,  # type: ignore[arg-type]
    )


def promoted(p: Proposal, at: int) -> list[LedgerEntry]:
    """The proposal, its canary (control: the default "0") and its promotion, as the runner records them."""
    start = start_policy_canary(None, p, "0", 0.5, "e")
    after = end_policy_canary(start, True, "e")
    return [
        entry(p, "proposal", at, diff={"proposal": p.model_dump(mode="json")}),
        entry(p, "canary", at + 1, decision="start", diff=diff(None, start)),
        entry(p, "promotion", at + 2, decision="promote", diff=diff(start, after)),
    ]


def build_store(path: Path) -> dict[str, Proposal]:
    """acme and globex promoted their own versions, the shared scope its "1" (initech has no own scope);
    acme's trajectories were served by "0" and then acme.1. Returns the proposals by version."""
    store = DuckDBStore(path)
    acme = [served_by(make_trajectory(f"acme~t{i}", "acme", 1, reward=0.2), "0") for i in range(2)]
    acme += [
        served_by(make_trajectory(f"acme~u{i}", "acme", 1, reward=0.9), "acme.1", timedelta(hours=1))
        for i in range(2)
    ]
    globex = [
        served_by(make_trajectory(f"globex~t{i}", "globex", 1, reward=0.5), "globex.1") for i in range(3)
    ]
    initech = [served_by(make_trajectory("initech~t0", "initech", 1, reward=1.0), "1")]
    records = [SourceRecord("a", 0, i, t.trajectory_id, encode(t))
               for i, t in enumerate([*acme, *globex, *initech])]  # fmt: skip
    p_acme = proposal("acme.1", "acme", [("acme", "acme~t0"), ("acme", "acme~t1")])
    p_globex = proposal("globex.1", "globex", [("globex", "globex~t0")])
    p_shared = proposal("1", "shared", [("initech", "initech~t0"), ("hooli", "hooli~t0")])
    entries = [*promoted(p_acme, 0), *promoted(p_globex, 10), *promoted(p_shared, 20)]
    try:
        write(store, records + ledger_records(entries, start=100))
    finally:
        store.close()
    return {"acme.1": p_acme, "globex.1": p_globex, "1": p_shared}


def test_each_tenant_sees_the_version_it_is_served_its_lineage_and_reward_by_version(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    p_acme = build_store(path)["acme.1"]

    got = {r["tenant"]: r for r in rows(path, "SELECT * FROM tenant_policies")}
    assert got["acme"]["served_version"] == "acme.1" and got["acme"]["served_by"] == "own"
    assert got["acme"]["lineage_trajectories"] == 2 and got["acme"]["lineage_tenants"] == 1
    assert got["acme"]["lineage_parent"] == "0" and got["acme"]["lineage_scope"] == "acme"
    assert got["acme"]["proposal_id"] == p_acme.proposal_id
    by_version = {r["policy_version"]: r for r in got["acme"]["reward_by_version"]}
    assert by_version["0"]["mean_reward"] == 0.2 and by_version["acme.1"]["mean_reward"] == 0.9
    assert by_version["acme.1"]["trajectories"] == 2
    assert got["globex"]["served_version"] == "globex.1" and got["globex"]["served_by"] == "own"
    # a tenant without an own scope is served the shared promotion; its share of that lineage is its own
    assert got["initech"]["served_version"] == "1" and got["initech"]["served_by"] == "shared"
    assert got["initech"]["lineage_trajectories"] == 1 and got["initech"]["lineage_tenants"] == 2

    # rolled back in acme: acme goes back to the version the promotion replaced; globex keeps its own
    rollback = entry(
        p_acme,
        "rollback",
        30,
        decision="rollback",
        diff=diff(OverlayAssignment(tenant="acme", active_policy="acme.1"),
                  OverlayAssignment(tenant="acme", active_policy="0")),
    )  # fmt: skip
    store = DuckDBStore(path)
    try:
        write(store, ledger_records([rollback], start=200))
    finally:
        store.close()
    got = {r["tenant"]: r for r in rows(path, "SELECT * FROM tenant_policies")}
    assert got["acme"]["served_version"] == "0" and got["globex"]["served_version"] == "globex.1"

    # a tenant's key: its own row, its own reward by version, nothing of another tenant
    acme_key = Principal(tenant="acme")
    mine = rows(path, "SELECT tenant, served_version FROM tenant_policies", acme_key)
    assert mine == [{"tenant": "acme", "served_version": "0"}]
    versions = rows(path, "SELECT DISTINCT tenant, policy_version FROM policy_rewards ORDER BY 2", acme_key)
    assert versions == [
        {"tenant": "acme", "policy_version": "0"},
        {"tenant": "acme", "policy_version": "acme.1"},
    ]
