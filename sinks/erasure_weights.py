"""Erasure that reaches the weights: the policy versions trained on erased trajectories stop serving, leave
every disk and server, and their lines are rebuilt without the data.

Run by the erasure itself, after the store's rows are gone and the erasure event is out, in order:

1. **Find** the tainted versions (``governance.evolve.taint``): every version whose lineage (the weights
   proposals in the ledger table) names an erased trajectory, and every descendant of one.
2. **Stop serving them.** Each assignment whose active policy is tainted goes back to its line's newest
   untainted ancestor (the base when none), a canary of a tainted candidate ends, and every tainted
   version's proposal gets an ``erased`` decision, so the control plane never gates or promotes it; each
   change is a ledger entry first. Every policy server whose default is tainted is rolled back the same
   way, then discards every tainted version it holds (its name stays used, so it cannot come back).
   Every policy server also drops the token history it remembers for the erased trajectories (the text
   of their calls as the agent sent it, kept in memory to keep a re-sent conversation's token ids).
3. **Delete them** from disk: the trainer's pushed files of tainted versions and the checkpoints that
   hold a tainted version or trained on an erased trajectory. A rebuild the trainer left unpublished
   (``sluice.rebuild_files``: its plan under ``<trainer.output_dir>/rebuild/``, resumed when the
   trainer restarts) is a copy of training data: the erased trajectories' rows leave it, and a plan that
   starts from a tainted version is deleted whole.
4. **Rebuild** is the live trainer's part: it reads the erasure's tombstones on the train topic, puts each
   tainted line back on its untainted ancestor and retrains it on the same rows minus the erased ones;
   the rebuilt version is a candidate like any other, recorded with ``rebuild_of``.

The receipt's ``weights`` place lists all of it. Copies of weights taken outside Sluice (downloaded
adapters, another serving stack) are out of its reach, and the receipt says so.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import duckdb
from pydantic import ValidationError

from governance.evolve.taint import tainted_versions, untainted_ancestor
from sinks.erasure_models import ErasurePlace
from sinks.settings import SinkSettings
from sluice.events import new_id
from sluice.evolution import LedgerEntry, OverlayAssignment, PolicyLineage, Proposal
from sluice.policy_client import PolicyClient, PolicyClientError, withdraw
from sluice.rebuild_files import delete_checkpoints, erase_from_plans

log = logging.getLogger("sluice.sink.erasure")
ACTOR = "sluice-erasure"


def recorded_lineages(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str, PolicyLineage]]:
    """Version -> (its proposal id, its lineage), from the weights proposals in the ledger table."""
    got = con.execute(
        "SELECT proposal_id, CAST(diff AS VARCHAR) FROM store.evolution_ledger "
        "WHERE kind = 'proposal' AND surface = 'weights' AND policy_version IS NOT NULL"
    ).fetchall()
    out: dict[str, tuple[str, PolicyLineage]] = {}
    for proposal_id, diff in got:
        try:
            lineage = Proposal.model_validate(json.loads(diff)["proposal"]).lineage
        except (ValueError, KeyError, TypeError, ValidationError):
            continue
        if lineage is not None:
            out[lineage.version] = (proposal_id, lineage)
    return out


def erasure_entry(
    erasure_id: str,
    tainted: dict[str, str],
    proposal_id: str,
    kind: str,
    tenant: str,
    version: str | None,
    summary: str,
    **fields: Any,
) -> LedgerEntry:
    """A ledger entry of an erasure's pass over the weights (decision ``erased``; its evidence names the
    erasure and every version it found tainted: the ``erasure_rebuilds`` view reads them back)."""
    return LedgerEntry(
        proposal_id=proposal_id, kind=kind, surface="weights", tenant=tenant, decision="erased",  # type: ignore[arg-type]
        policy_version=version, summary=summary, actor=ACTOR,
        evidence={"erasure_id": erasure_id, "tainted": tainted}, **fields,
    )  # fmt: skip


class WeightsErasure:
    """One erasure's pass over the weights (``run``), and what it did, for the receipt."""

    def __init__(
        self, con: duckdb.DuckDBPyConnection, cfg: SinkSettings, erased: set[str], erasure_id: str
    ) -> None:
        self.con, self.cfg, self.erased, self.erasure_id = con, cfg, erased, erasure_id
        self.recorded = recorded_lineages(con)
        self.lineages = [lin for _, lin in self.recorded.values()]
        self.tainted = tainted_versions(self.lineages, erased)
        self.rolled_back: dict[str, str] = {}  # scope key or server -> "from -> to"
        self.discarded: dict[str, list[str]] = {}
        self.deleted: list[str] = []
        self.plans_rewritten: list[str] = []  # pending rebuild plans the erased rows left
        self.forgotten: dict[str, int] = {}  # server -> token-history sequences of the erased calls dropped
        self.problems: list[str] = []

    def target(self, version: str, base: str = "0") -> str:
        return untainted_ancestor(version, self.lineages, self.tainted, base)

    def run(self) -> ErasurePlace:
        self.forget_calls()
        if not self.tainted:
            self.delete_files()  # a checkpoint of a trainer that recorded no lineage (re-sampling mode)
            removed = "no policy version was trained on them: nothing to roll back or rebuild" + (
                f"; {len(self.deleted)} checkpoints that trained on them deleted" if self.deleted else ""
            )
            action = "; ".join(self.problems) or None
            return ErasurePlace(place="weights", removed=removed + self._plans() + self._forgot(), operator_action=action,
                                paths=[*self.deleted, *self.plans_rewritten])  # fmt: skip
        try:
            self.stop_routing()
        except Exception as err:  # the broker away: the servers and files are still handled
            self.problems.append(f"assignments and ledger not updated: {type(err).__name__}: {err}")
        self.stop_servers()
        self.delete_files()
        return self.place()

    # ------------------------------------------------------------------ 2. stop serving
    def stop_routing(self) -> None:
        from pipeline.evolve.publish import EvolutionPublisher

        with EvolutionPublisher(self.cfg.broker, self.cfg.topics) as pub:
            for version, why in sorted(self.tainted.items()):
                proposal_id, lin = self.recorded.get(version, (f"erasure-{self.erasure_id}", None))
                tenant = "*" if lin is None or lin.scope == "shared" else lin.scope
                pub.record(self._entry(proposal_id, "decision", tenant, version, f"erased: {why}"))
            for a in pub.read_assignments(self.cfg.sink.producer_timeout_s).values():
                after = self._without_tainted(a)
                if after is None:
                    continue
                entry_id = new_id()
                pub.record(
                    self._entry(
                        a.proposal_id or f"erasure-{self.erasure_id}",
                        "rollback",
                        a.tenant,
                        after.active_policy,
                        f"erasure {self.erasure_id}: policy {a.active_policy} -> {after.active_policy}"
                        + (
                            f", canary of {a.candidate_policy} ended"
                            if a.candidate_policy in self.tainted
                            else ""
                        ),
                        task_id=a.task_id,
                        entry_id=entry_id,
                        diff={"before": a.model_dump(mode="json"), "after": after.model_dump(mode="json")},
                    )  # fmt: skip
                )
                pub.assign(after.model_copy(update={"ledger_entry_id": entry_id}))
                self.rolled_back[a.key] = (
                    f"{a.active_policy or 'default'} -> {after.active_policy or 'default'}"
                )

    def _without_tainted(self, a: OverlayAssignment) -> OverlayAssignment | None:
        update: dict[str, Any] = {}
        if a.active_policy in self.tainted:
            update["active_policy"] = self.target(a.active_policy)
        if a.candidate_policy in self.tainted:
            update |= {
                "candidate_policy": None,
                "canary_share": 0.0 if a.candidate is None else a.canary_share,
            }
        return a.model_copy(update=update) if update else None

    def _entry(self, proposal_id: str, kind: str, tenant: str, version: str | None, summary: str,
               **fields: Any) -> LedgerEntry:  # fmt: skip
        return erasure_entry(
            self.erasure_id, self.tainted, proposal_id, kind, tenant, version, summary, **fields
        )

    def stop_servers(self) -> None:
        """Every policy server whose default is tainted rolls back (to the nearest untainted ancestor in the
        ledger, else the version it loaded with); every server discards what it holds of the tainted
        versions (``sluice.policy_client.withdraw``)."""
        for url in self.cfg.policy_servers:
            client = PolicyClient(url, self.cfg.sink.producer_timeout_s)
            try:
                done = withdraw(client, set(self.tainted), lambda default: [self.target(default)])
            except (PolicyClientError, ValueError) as err:
                self.problems.append(f"policy server {url}: {type(err).__name__}: {err}")
                continue
            if done.rolled_back:
                self.rolled_back[url] = done.rolled_back
            if done.discarded:
                self.discarded[url] = done.discarded

    def forget_calls(self) -> None:
        """Every policy server drops the token history it remembers for the erased trajectories."""
        for url in self.cfg.policy_servers:
            try:
                self.forgotten[url] = PolicyClient(url, self.cfg.sink.producer_timeout_s).forget(self.erased)
            except PolicyClientError as err:
                self.problems.append(f"policy server {url}: token history not forgotten: {err}")

    def _forgot(self) -> str:
        if not self.forgotten:
            return ""
        return f"; token history of the erased calls dropped from server memory: {sum(self.forgotten.values())} sequences"

    # ------------------------------------------------------------------ 3. delete
    def delete_files(self) -> None:
        push = self.cfg.path(self.cfg.policy_push_dir)
        for version in self.tainted:
            for f in push.glob(f"policy-v{version}.*"):
                f.unlink(missing_ok=True)
                self.deleted.append(str(f))
        root = self.cfg.path(self.cfg.checkpoints_dir)
        self.deleted += [str(p) for p in delete_checkpoints(root, set(self.tainted), self.erased)]
        self.erase_plans()

    def erase_plans(self) -> None:
        """Pending rebuild plans: the erased rows out of each, a plan starting from a tainted version gone."""
        try:
            rewritten, removed = erase_from_plans(
                self.cfg.path(self.cfg.rebuild_dir), self.erased, set(self.tainted)
            )
        except OSError as err:
            self.problems.append(f"pending rebuild plans not cleared: {type(err).__name__}: {err}")
            return
        self.plans_rewritten += [str(p) for p in rewritten]
        self.deleted += [str(p) for p in removed]

    def _plans(self) -> str:
        if not self.plans_rewritten:
            return ""
        return f"; erased rows dropped from pending rebuild plans: {self.plans_rewritten}"

    def place(self) -> ErasurePlace:
        lines = sorted({self.target(v) for v in self.tainted})
        removed = (
            f"tainted policy versions {sorted(self.tainted)}; rolled back: "
            + (", ".join(f"{k} {v}" for k, v in sorted(self.rolled_back.items())) or "nothing served them")
            + "; discarded from servers: "
            + (", ".join(f"{u} {vs}" for u, vs in sorted(self.discarded.items())) or "none held them")
            + f"; {len(self.deleted)} files deleted; rebuild: the live trainer retrains each line from "
            f"{lines} without the erased trajectories, as a new candidate for the gates (ledger: rebuild_of)"
            + self._plans()
            + self._forgot()
        )
        action = "copies of these weights taken outside Sluice (downloaded files, other serving stacks) are out of its reach"
        if self.problems:
            action = "; ".join(self.problems) + "; " + action
        return ErasurePlace(
            place="weights",
            removed=removed,
            operator_action=action,
            paths=[*self.deleted, *self.plans_rewritten],
            versions=sorted(self.tainted),
        )


def erase_from_weights(
    con: duckdb.DuckDBPyConnection, cfg: SinkSettings, ids: list[str], erasure_id: str
) -> ErasurePlace:
    """Steps 1-3 above for the erased trajectory ids; the receipt's ``weights`` place."""
    return WeightsErasure(con, cfg, set(ids), erasure_id).run()
