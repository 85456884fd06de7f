"""The driver of live mode: train-topic records -> GRPO groups -> staleness check -> learner update -> push.

No rollout workers: the traffic the proxy recorded is the rollout. The driver asks the feeder for new
trajectory versions, gathers their samples into groups (``GroupAssembler``), and once ``update_samples``
rows are ready (or the oldest waited ``update_wait_s``) checks them against the learner's version
(``apply_staleness``) and sends them to the learner, which updates and publishes the new version to the
policy servers. One update at a time: the next batch is checked against the version the last one made.

A version is pushed only after its lineage (the trajectory versions, tenants and reward sources it
trained on, and its parent) is recorded in the ledger: as a candidate for the gates with
``trainer.promotion: gated``, or as served ungated with ``direct``.

Every update appends a line to ``metrics.jsonl`` (``policy_version``, reward, staleness and drop counts,
push timings, ``reward_to_serving_s_p50``: posted reward -> a policy trained on it serving, and
``merged_trajectory_frac``: multi-step trajectories trained as one sequence) and rewrites
``policy_state.json``. Offsets are checkpointed only up to the oldest trajectory not trained yet.

An erasure's tombstones make the driver rebuild each line that trained on an erased trajectory
(``trainers.live.rebuild``). A rebuild is written to ``<output_dir>/rebuild/`` before it replays and
removed once published, so a restart resumes an unfinished one before its first turn.
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

from sluice.events import trajectory_owner
from sluice.evolution import SHARED_SCOPE
from trainers.config import TrainerConfig
from trainers.live.grouping import GroupAssembler
from trainers.live.lineage import LineageLedger, UnpublishedRows, build_lineage
from trainers.live.policy_state import PolicyState, write_policy_state
from trainers.live.published import PublishedLine
from trainers.live.rebuild import LineRebuilds
from trainers.live.samples import LiveItem, LiveRow
from trainers.live.staleness import apply_staleness, in_scope
from trainers.loop_core import OnStep, RunSetup, TrainingLoop

TAKE_BATCH = 256  # trajectory versions asked of the feeder per call


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


class LiveLoop(TrainingLoop, LineRebuilds):
    log = logging.getLogger("sluice.trainer.live")

    def __init__(
        self,
        tcfg: TrainerConfig,
        run: RunSetup,
        feeder: Any,
        learner: Any,
        on_step: OnStep | None = None,
        ledger: LineageLedger | None = None,
    ) -> None:
        """``ledger``: where each new version's proposal and lineage is recorded before its push."""
        super().__init__(tcfg, run, feeder, learner, on_step)
        self.ledger = ledger
        self.lineages = 0
        self.pending_erased: set[str] = set()  # erased while an update ran: handled on the next turn
        self.live = tcfg.live
        self.groups = GroupAssembler(
            tcfg.group_size, self.live.group_wait_s, self.live.baseline_decay, tcfg.scale_rewards
        )
        self.ready: dict[str, deque[tuple[LiveRow, float]]] = {}  # learning scope -> rows ready to train
        self.items: dict[str, LiveItem] = {}  # trajectory id -> newest version received, until trained
        self.unpublished = UnpublishedRows()  # per scope, what its next version trained on since its parent
        # learning scope -> its published versions and what each trained on (an erasure rebuilds the
        # tainted ones from these, minus the erased rows)
        self.published: dict[str, PublishedLine] = {}
        self.totals: Counter[str] = Counter()
        self.serving: dict[str, str] = {}
        self.version = 0  # the shared scope's
        self.versions: dict[str, int] = {}  # every scope's
        self.base: tuple[str, int] = (SHARED_SCOPE, 0)  # the version every own line starts from
        self.last_pushed: int | None = None

    # ----------------------------------------------------------------------------- main loop

    def _begin(self) -> None:
        self.version = ray.get(self.learner.get_version.remote())
        self.versions = {SHARED_SCOPE: self.version}
        self.base = (SHARED_SCOPE, self.version)
        self.state.policy_version = self.version
        self._write_state()
        self._resume_rebuilds()  # a rebuild a previous run left unpublished: before anything new trains

    def _turn(self, start: float) -> Iterator[dict[str, Any]]:
        yield from self._erasures(start)
        items, self.feeder_stats = ray.get(self.feeder.take.remote(TAKE_BATCH, self.t.poll_timeout_s))
        now = time.monotonic()
        if items:
            self.last_data_at = now
        for item in items:
            scoped = self._scoped(item)
            if scoped is None:
                continue
            self.items[item.trajectory_id] = scoped
            self.groups.add(scoped, now)
        for row in self.groups.take_ready(now):
            self.ready.setdefault(self.live.scope_of(row.sample.tenant) or "", deque()).append((row, now))
        scope = self._due(now)
        if scope is not None:
            m = self._update(start, scope)
            if m is not None:
                yield m

    def _scoped(self, item: LiveItem) -> LiveItem | None:
        """The item with its samples grouped inside its tenant's learning scope (groups and baselines never
        mix scopes); None when the tenant's scope is none."""
        tenant = next((s.tenant for s in item.samples), "") or (trajectory_owner(item.trajectory_id) or "")
        scope = self.live.scope_of(tenant)
        if scope is None:
            self.totals["scope_none"] += len(item.samples)
            return None
        samples = [
            s.model_copy(update={"tenant": tenant, "group_key": f"{scope}|{s.group_key}",
                                 "baseline_key": f"{scope}|{s.baseline_key}"})
            for s in item.samples
        ]  # fmt: skip
        return item.model_copy(update={"samples": samples})

    def _busy(self) -> bool:
        return any(self.ready.values()) or bool(self.groups.groups)

    def _due(self, now: float) -> str | None:
        """The scope to update now: the first with enough rows, or whose oldest row waited long enough."""
        due = [
            (q[0][1], scope)
            for scope, q in self.ready.items()
            if q and (len(q) >= self.live.update_samples or now - q[0][1] >= self.live.update_wait_s)
        ]
        return min(due)[1] if due else None

    def _update(self, start: float, scope: str) -> dict[str, Any] | None:
        queue = self.ready[scope]
        n = min(len(queue), self.live.max_update_samples)
        rows = [queue.popleft()[0] for _ in range(n)]
        rows, other = in_scope(rows, scope, self.base)
        kept, counts, lags = apply_staleness(
            rows, self.versions.get(scope, 0), self.t.max_staleness, self.t.stale_policy, self.t.stale_decay
        )
        counts.update(other)
        self.totals.update(counts)
        self.totals["offered"] += n
        if not kept:
            self.log.info(
                "%s: no row of %d within the staleness bound (%s): no update", scope, n, dict(counts)
            )
            return None
        lm = ray.get(self.learner.train.remote(kept, scope))
        erased = set(ray.get(self.feeder.take_erased.remote()))
        if erased:  # erased while this update ran: its version is not published (the next turn rebuilds)
            self.pending_erased |= erased
            if any(r.sample.trajectory_id in erased for r in kept):
                lm["due_push"] = False
        if lm.get("updated", True):
            self.unpublished.trained(scope, kept, reset=bool(lm.get("reset_to")))
        if lm.pop("due_push", False):
            lm.update(self._publish(kept, lm, scope))
        now = time.monotonic()
        wall = time.time()
        self.versions[scope] = lm["policy_version"]
        if scope == SHARED_SCOPE:
            self.version = lm["policy_version"]
        self.serving = lm.get("serving_versions") or self.serving
        window = max(1e-9, now - self.last_step_at)
        self.last_step_at = now
        self.state.step += 1
        self.state.samples += len(kept)
        self.state.policy_version = self.version
        self.totals["trained"] += len(kept)
        self.totals[f"trained:{scope}"] += len(kept)
        rewards = [r.sample.reward for r in kept]
        by_version: dict[str, list[float]] = {}
        for r in kept:
            by_version.setdefault(str(r.sample.policy_version), []).append(r.sample.reward)
        latency = [wall - r.sample.reward_at for r in kept if r.sample.reward_at is not None]
        pushed = lm.get("pushed_version") == lm["policy_version"]
        steps_stats = self.feeder_stats.get("steps", {})
        group_counts = self.groups.counts
        m: dict[str, Any] = {
            "step": self.state.step,
            "mode": "live",
            "scope": scope,
            "policy_version": lm["policy_version"],
            "scope_versions": dict(self.versions),
            "elapsed_s": now - start,
            "reward_mean": statistics.fmean(rewards),
            "reward_std": statistics.pstdev(rewards) if len(rewards) > 1 else 0.0,
            "reward_by_version": {v: statistics.fmean(x) for v, x in sorted(by_version.items())},
            "samples": len(kept),
            "samples_per_s": len(kept) / window,
            "tokens_per_s": lm["trained_tokens"] / window,
            "samples_total": self.state.samples,
            "staleness_mean": statistics.fmean(lags) if lags else 0.0,
            "staleness_max": max(lags, default=0),
            "dropped_stale": counts["dropped_stale"],
            "downweighted": counts["downweighted"],
            "unknown_version": counts["unknown_version"],
            "other_scope": counts["other_scope"],
            "other_scope_total": self.totals["other_scope"],
            "scope_none_total": self.totals["scope_none"],
            "dropped_stale_total": self.totals["dropped_stale"],
            "unknown_version_total": self.totals["unknown_version"],
            "downweighted_total": self.totals["downweighted"],
            "stale_dropped_frac": (self.totals["dropped_stale"] + self.totals["unknown_version"])
            / max(1, self.totals["offered"]),
            "retokenized_total": steps_stats.get("retokenized", 0),
            "no_behaviour_logprobs_total": steps_stats.get("no_behaviour_logprobs", 0),
            "unrewarded_steps_total": steps_stats.get("unrewarded", 0),
            "multi_step_trajectories_total": steps_stats.get("multi_step_trajectories", 0),
            "merged_trajectories_total": steps_stats.get("merged_trajectories", 0),
            "fallback_steps_total": steps_stats.get("fallback_steps", 0),
            "per_step_reward_trajectories_total": steps_stats.get("per_step_reward_trajectories", 0),
            "merged_trajectory_frac": steps_stats.get("merged_trajectories", 0)
            / max(1, steps_stats.get("multi_step_trajectories", 0)),
            "grouped_samples_total": group_counts["grouped_samples"],
            "baseline_samples_total": group_counts["baseline_samples"],
            "no_baseline_samples_total": group_counts["no_baseline_samples"],
            "zero_signal_groups_total": group_counts["zero_signal_groups"],
            "already_trained_total": group_counts["already_trained"],
            "kl": 0.0,
            "reward_to_serving_s_p50": _pct(latency, 0.5) if pushed else None,
            "reward_to_serving_s_max": max(latency) if pushed and latency else None,
            **self.feeder_totals(),
            **{
                k: v
                for k, v in lm.items()
                if k not in ("policy_version", "serving_versions", "trained_samples", "scope")
            },
            "serving_versions": self.serving,
        }
        if pushed and scope == SHARED_SCOPE:
            self.last_pushed = self.version
        self._record(m)
        return m

    def _publish(
        self, kept: list[LiveRow], lm: dict[str, Any], scope: str, rebuild_of: list[str] | None = None
    ) -> dict[str, Any]:
        """Record the new version's lineage in the ledger, then push it (nothing is pushed unrecorded);
        a direct own-scope version is then routed to its tenant. The lineage holds every row trained since
        the scope's last published version (its parent), whichever update trained it."""
        rows = self.unpublished.since_parent(scope) or kept
        lineage = build_lineage(
            rows, lm["version_name"], lm.get("parent_version"), self.t.promotion, scope, rebuild_of
        )
        if self.ledger is not None and not self.ledger.record(lineage):
            return {"push_s": 0.0, "pushed_servers": 0, "push_errors": 0, "unrecorded_versions": 1}
        self.unpublished.published(scope)
        self.lineages += 1
        self.published.setdefault(scope, PublishedLine()).append(lineage.version, rows)
        pushed = ray.get(self.learner.publish.remote(scope))
        if (
            self.ledger is not None
            and self.t.promotion == "direct"
            and pushed.get("push_role") == "candidate"
        ):
            self.ledger.route(lineage)  # served by its assignment: its tenant's, or the pooled line's (*)
        return {**pushed, "lineage_trajectories": len(lineage.items)}

    def _recorded(self, m: dict[str, Any]) -> None:
        self._write_state()

    def _write_state(self) -> None:
        write_policy_state(
            Path(self.output_dir),
            PolicyState(
                policy_version=self.version,
                step=self.state.step,
                serving_versions=self.serving,
                last_push_version=self.last_pushed,
                scope_versions=dict(self.versions),
            ),
        )

    # ----------------------------------------------------------------------------- checkpoints

    def untrained(self) -> list[LiveItem]:
        open_ids = {i.trajectory_id for i in self.groups.waiting()}
        open_ids |= {row.sample.trajectory_id for q in self.ready.values() for row, _ in q}
        self.items = {tid: item for tid, item in self.items.items() if tid in open_ids}
        return list(self.items.values())
