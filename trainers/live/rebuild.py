"""Erasure in the live trainer: forget the erased trajectories' rows and rebuild each line that learned them.

The feeder reads the erasure's tombstones on the train topic. For each learning line that trained on an
erased trajectory, the driver goes back to the line's newest untainted version (``learner.reset_scope``;
the base when the learner holds no copy of it) and replays every later update from the same rows minus
the erased ones (``PublishedLine.replay_after``, then the scope's unpublished rows), in the order the
line trained them, with no staleness check, each row as the line trained it; updates that shrank below
``live.update_samples`` rows without the erased ones are joined to the next (``coalesce``). The rebuilt version is published as a
candidate with ``rebuild_of`` in its lineage, and a metrics line says what it replayed
(``rebuilt_version``, ``rebuilt_from``, ``rebuild_rows_erased``, ``rebuild_rows_let_go``, the replayed
updates' mean fit).

A rebuild is durable until it is published: before the first replayed update the plan (what to replay
and the starting weights) is written under ``<trainer.output_dir>/rebuild/``
(``trainers.live.rebuild_plan``) and removed once the rebuilt version is published. A restarted trainer
resumes each plan it finds before its first turn (its metrics line says ``rebuild_resumed: true``), so a
trainer killed mid-rebuild still republishes the line without the erased data. Erasure reaches a pending
plan too: the trainer drops a later erasure's rows from it, and so does the sink's erasure while the
trainer is down (``sinks.erasure_weights``).
"""

from __future__ import annotations

import logging
import statistics
import time
from collections import Counter, deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ray

from sluice.evolution import SHARED_SCOPE, policy_version_name
from sluice.rebuild_files import delete_checkpoints, erase_from_plans, rebuild_root, remove_plan
from trainers.checkpoint import TrainerState
from trainers.live.config import LiveConfig
from trainers.live.grouping import GroupAssembler
from trainers.live.lineage import UnpublishedRows
from trainers.live.published import PublishedLine, coalesce
from trainers.live.rebuild_plan import RebuildPlan, read_plans, read_weights, write_plan
from trainers.live.samples import LiveItem, LiveRow


class LineRebuilds:
    """The live driver's erasure handling (``_erasures``) and rebuilds, resumed ones included; mixed into
    ``trainers.live.loop.LiveLoop``, whose state it reads and updates."""

    log: logging.Logger
    live: LiveConfig
    learner: Any
    feeder: Any
    output_dir: str
    state: TrainerState
    pending_erased: set[str]
    items: dict[str, LiveItem]
    groups: GroupAssembler
    ready: dict[str, deque[tuple[LiveRow, float]]]
    unpublished: UnpublishedRows
    published: dict[str, PublishedLine]
    totals: Counter[str]
    versions: dict[str, int]
    version: int
    base: tuple[str, int]

    @property
    def rebuild_root(self) -> Path:
        return rebuild_root(self.output_dir)

    def _resume_rebuilds(self) -> None:
        """Before the first turn: replay and publish every rebuild a previous run left unpublished."""
        for plan in read_plans(self.rebuild_root):
            weights = read_weights(self.rebuild_root, plan.scope)
            ray.get(self.learner.load_scope.remote(plan.scope, weights, plan.rebuilt_from, plan.version))
            self.totals["rebuilds"] += 1
            self.log.info(
                "%s: resuming the rebuild of %s from %s", plan.scope, plan.rebuild_of, plan.rebuilt_from
            )
            withdrawn = self._withdraw(plan.rebuild_of, [plan.rebuilt_from, policy_version_name(*self.base)])
            m = self._replay(plan, time.monotonic(), resumed=True)
            if m is not None:
                self._record({**m, **withdrawn})

    def _withdraw(self, tainted: list[str], fallbacks: list[str]) -> dict[str, Any]:
        """The line's tainted versions off the servers and disk, checkpoints of them included. The erasure
        withdrew those it found in the ledger; one this trainer published after that read is only known
        here (it descends from a tainted version)."""
        if not tainted:
            return {}
        out = ray.get(self.learner.withdraw.remote(tainted, fallbacks))
        checkpoints = delete_checkpoints(Path(self.output_dir) / "checkpoints", set(tainted))
        out["files_deleted"] += [str(p) for p in checkpoints]
        if out["held"]:
            self.log.warning(
                "tainted versions %s are still on a server after the rebuild's withdrawal", out["held"]
            )
        return {"rebuild_withdrawn_held": out["held"], "rebuild_withdrawn_rollbacks": out["rolled_back"],
                "rebuild_withdrawn_files": out["files_deleted"]}  # fmt: skip

    def _erasures(self, start: float) -> Iterator[dict[str, Any]]:
        """Tombstones read by the feeder: forget the erased trajectories' waiting rows and drop them from
        any pending plan; rebuild each learning line that trained on one."""
        erased = self.pending_erased | set(ray.get(self.feeder.take_erased.remote()))
        self.pending_erased = set()
        if not erased:
            return
        self.items = {t: i for t, i in self.items.items() if t not in erased}
        self.groups.forget(erased)
        for scope, queue in self.ready.items():
            self.ready[scope] = deque((r, at) for r, at in queue if r.sample.trajectory_id not in erased)
        rewritten, _ = erase_from_plans(self.rebuild_root, erased)
        if rewritten:
            self.log.info("erased rows dropped from pending rebuild plans %s", [str(p) for p in rewritten])
        for scope in sorted(set(self.published) | set(self.unpublished.rows)):
            m = self._rebuild(scope, erased, start)
            if m is not None:
                self._record(m)
                yield m

    def _rebuild(self, scope: str, erased: set[str], start: float) -> dict[str, Any] | None:
        """Go back to the line's newest untainted version, write the plan, replay it and publish."""
        line = self.published.setdefault(scope, PublishedLine())
        hit = line.first_hit(erased)
        loose = self.unpublished.since_parent(scope)
        if hit is None and not any(r.sample.trajectory_id in erased for r in loose):
            return None
        first = len(line.entries) if hit is None else hit
        base = policy_version_name(*self.base)
        target = line.entries[first - 1].version if first > 0 else base
        used = ray.get(self.learner.reset_scope.remote(scope, target))
        keep = line.index_after(used)
        replay, lost, erased_rows = line.replay_after(keep, erased)
        loose_kept = [r for r in loose if r.sample.trajectory_id not in erased]
        erased_rows += len(loose) - len(loose_kept)
        replay.append(loose_kept)
        tainted = line.cut(keep)
        withdrawn = self._withdraw(tainted, [used, base])
        self.unpublished.published(scope)
        self.totals["rebuilds"] += 1
        self.log.info(
            "%s: erasure reached %s; rebuilding from %s", scope, tainted or "unpublished rows", used
        )
        if not any(replay):
            remove_plan(self.rebuild_root, scope)  # an older plan of the line is superseded
            return None  # nothing left to learn from: the line serves its untainted version
        plan = RebuildPlan(
            scope=scope, version=ray.get(self.learner.get_versions.remote())[scope], rebuilt_from=used,
            rebuild_of=tainted, rows_erased=erased_rows, rows_let_go=lost,
            batches=coalesce(replay, self.live.update_samples),
        )  # fmt: skip
        write_plan(self.rebuild_root, plan, ray.get(self.learner.scope_weights.remote(scope)))
        m = self._replay(plan, start)
        return None if m is None else {**m, **withdrawn}

    def _replay(self, plan: RebuildPlan, start: float, resumed: bool = False) -> dict[str, Any] | None:
        """Replay a plan from the scope's current weights (its ``rebuilt_from``), one update per batch,
        publish the rebuilt version with ``rebuild_of``, then remove the plan; the metrics line."""
        scope = plan.scope
        trained: list[LiveRow] = []
        lm: dict[str, Any] | None = None
        fit: list[dict[str, Any]] = []  # how each replayed update went: a rebuild that drifts shows here
        for rows in plan.batches:
            if rows:
                lm = ray.get(self.learner.train.remote(rows, scope, replay=True))
                trained += rows
                fit.append(lm)
        if lm is None or not trained:
            remove_plan(self.rebuild_root, scope)
            return None  # nothing left to learn from: the line serves its untainted version
        lm.pop("due_push", None)
        self.unpublished.trained(scope, trained)
        self.versions[scope] = lm["policy_version"]
        if scope == SHARED_SCOPE:
            self.version = lm["policy_version"]
        pushed = self._publish(
            trained, {**lm, "parent_version": plan.rebuilt_from}, scope, rebuild_of=plan.rebuild_of
        )
        if not pushed.get("unrecorded_versions"):  # unrecorded: not published, a restart tries again
            remove_plan(self.rebuild_root, scope)
        resumed_flag = {"rebuild_resumed": True} if resumed else {}
        return {"step": self.state.step, "mode": "live", "scope": scope, "rebuild_of": plan.rebuild_of,
                "rebuilt_from": plan.rebuilt_from, "rebuilt_version": lm["version_name"],
                "rebuilt_samples": len(trained), "rebuild_rows_let_go": plan.rows_let_go,
                "rebuild_rows_erased": plan.rows_erased, **resumed_flag,
                **{f"rebuild_{k}_mean": statistics.fmean(u[k] for u in fit)
                   for k in ("masked_frac", "behaviour_weight_mean", "clip_frac", "grad_norm")},
                "elapsed_s": time.monotonic() - start, "rebuilds_total": self.totals["rebuilds"],
                "policy_version": lm["policy_version"], **pushed}  # fmt: skip
