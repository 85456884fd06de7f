"""The rest of an erasure's receipt, read from the ledger in a real DuckDB file: the versions an erasure
found tainted, each version rebuilt in their place and the gates' newest word on it."""

from __future__ import annotations

from pathlib import Path

from sinks.erasure_weights import erasure_entry
from sinks.store import DuckDBStore
from sluice.evolution import LedgerEntry, LineageItem, PolicyLineage, Proposal
from tests.sinks.test_evolution_ledger import ledger_records, rows, write
from tests.sinks.test_tenant_policies import entry
from trainers.live.lineage import weights_proposal


def proposal(version: str, parent: str, ids: list[str], rebuild_of: tuple[str, ...] = ()) -> Proposal:
    items = [LineageItem(trajectory_id=t, version=1, tenant="acme") for t in ids]
    lineage = PolicyLineage(version=version, parent=parent, scope="shared", items=items, samples=len(ids),
                            rebuild_of=list(rebuild_of))  # fmt: skip
    return weights_proposal(lineage)


def proposed(p: Proposal, at: int) -> LedgerEntry:
    return entry(p, "proposal", at, diff={"proposal": p.model_dump(mode="json")})


def test_an_erasure_names_its_tainted_versions_and_the_rebuilt_one_with_its_gate_outcome(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.duckdb"
    v1, v2 = proposal("1", "0", ["acme~a", "acme~subject"]), proposal("2", "1", ["acme~b"])
    other = proposal("3", "0", ["acme~c"])  # never tainted: no erasure names it
    tainted = {"1": "trained on acme~subject", "2": "descends from 1"}
    erased = [erasure_entry("er-1", tainted, p.proposal_id, "decision", "*", p.policy_version, "erased")
              for p in (v1, v2)]  # fmt: skip
    rebuilt = proposal("4", "0", ["acme~a", "acme~b"], rebuild_of=("1", "2"))
    entries = [proposed(v1, 0), proposed(v2, 1), proposed(other, 2), *erased, proposed(rebuilt, 10)]
    store = DuckDBStore(path)
    try:
        write(store, ledger_records(entries))
    finally:
        store.close()

    got = rows(path, "SELECT * FROM erasure_rebuilds")
    assert len(got) == 1
    r = got[0]
    assert r["erasure_id"] == "er-1" and sorted(r["tainted_versions"]) == ["1", "2"]
    assert r["rebuilt_version"] == "4" and r["rebuilt_from"] == "0" and r["rebuild_of"] == ["1", "2"]
    assert r["outcome_kind"] is None  # not gated yet

    # the gates pass it and it is promoted: the newest entry is the erasure's outcome
    gate = entry(rebuilt, "gate", 20, gate="replay", passed=True)
    promoted = entry(rebuilt, "promotion", 21, decision="promote")
    store = DuckDBStore(path)
    try:
        write(store, ledger_records([gate, promoted], start=100))
    finally:
        store.close()
    r = rows(path, "SELECT * FROM erasure_rebuilds WHERE erasure_id = 'er-1'")[0]
    assert r["outcome_kind"] == "promotion" and r["outcome_decision"] == "promote"
