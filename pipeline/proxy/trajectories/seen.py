"""Trajectory API: the trajectories this proxy recorded steps of, per tenant, before they land.

What ``GET /v1/trajectories`` reports before a trajectory lands in the store, and what a reward to an
unknown id is checked against.

Unlike history linking (``linking.history_linker``, bounded by ``link_window_s``), an entry stays until
``proxy.seen_max_trajectories`` newer ones push it out (least recently stepped first). It holds ids,
times and counts only, never message text; it is saved with the link state (``links.json``) so a
restart keeps it, and an erasure drops the entries it covers.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sluice.events import ErasureEvent


@dataclass(slots=True)
class SeenTrajectory:
    tenant: str
    trajectory_id: str
    first_step_at: float  # wall-clock seconds
    last_step_at: float
    steps: int = 0  # steps recorded through this proxy
    ended: bool = False
    rewards: int = 0  # rewards and feedback accepted for it


class SeenTrajectories:
    """Bounded map (tenant, trajectory id) -> ``SeenTrajectory``, most recently stepped last."""

    def __init__(self, max_trajectories: int) -> None:
        self.max_trajectories = max_trajectories
        self._seen: OrderedDict[tuple[str, str], SeenTrajectory] = OrderedDict()

    def __len__(self) -> int:
        return len(self._seen)

    def get(self, tenant: str, trajectory_id: str) -> SeenTrajectory | None:
        return self._seen.get((tenant, trajectory_id))

    def step(self, tenant: str, trajectory_id: str, step_index: int) -> None:
        """A step of the trajectory was recorded."""
        now = time.time()
        key = (tenant, trajectory_id)
        entry = self._seen.get(key)
        if entry is None:
            entry = self._seen[key] = SeenTrajectory(tenant, trajectory_id, now, now)
        else:
            self._seen.move_to_end(key)
        entry.last_step_at = now
        entry.steps = max(entry.steps, step_index + 1)
        while len(self._seen) > self.max_trajectories:
            self._seen.popitem(last=False)

    def reward(self, tenant: str, trajectory_id: str) -> None:
        entry = self._seen.get((tenant, trajectory_id))
        if entry is not None:
            entry.rewards += 1

    def end(self, tenant: str, trajectory_id: str) -> None:
        entry = self._seen.get((tenant, trajectory_id))
        if entry is not None:
            entry.ended = True

    def recent(self, tenant: str, limit: int) -> list[SeenTrajectory]:
        """The tenant's most recently stepped trajectories, newest first."""
        out: list[SeenTrajectory] = []
        for entry in reversed(self._seen.values()):
            if entry.tenant == tenant:
                out.append(entry)
                if len(out) >= limit:
                    break
        return out

    def forget(self, erasure: ErasureEvent, erased: Callable[[str], bool] = lambda _tid: False) -> int:
        """Drop the entries an erasure names by trajectory or tenant, and (a subject's erasure: subjects are
        not kept here) those ``erased`` says linking's state already marked erased; how many were dropped."""
        gone = [
            k for k, e in self._seen.items()
            if erasure.matches(e.trajectory_id, e.tenant, ()) or erased(e.trajectory_id)
        ]  # fmt: skip
        for key in gone:
            del self._seen[key]
        return len(gone)

    def snapshot(self) -> list[list[Any]]:
        return [
            [e.tenant, e.trajectory_id, e.first_step_at, e.last_step_at, e.steps, e.ended, e.rewards]
            for e in self._seen.values()
        ]

    def restore(self, rows: list[list[Any]]) -> None:
        for tenant, tid, first, last, steps, ended, rewards in rows:
            entry = SeenTrajectory(str(tenant), str(tid), float(first), float(last), int(steps), bool(ended))
            entry.rewards = int(rewards)
            self._seen[(entry.tenant, entry.trajectory_id)] = entry
        while len(self._seen) > self.max_trajectories:
            self._seen.popitem(last=False)
