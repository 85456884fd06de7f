"""GRPO groups from live traffic, and their advantages (pure logic: the clock is passed in).

Samples gather by ``group_key`` (the agent's task id, else the prompt prefix). A group is ready once it has
``group_size`` samples or its first sample waited ``group_wait_s``. A ready group of two or more samples
gets group-normalised advantages (``group_advantages``; all-equal rewards carry no signal and are left out,
as in GRPO). A group of one is compared with the running baseline of its task (``baseline_key``): an
exponential moving mean and variance of the rewards seen for that task, divided out when ``scale`` is on;
the first sample of a task only starts its baseline. Every reward, grouped or not, updates its task's
baseline.

A trajectory trains once: a newer version that arrives while the old one waits replaces it (the latest
reward wins); a version that arrives after its trajectory trained is counted and left out, since training
it again would count the same tokens twice.
"""

from __future__ import annotations

import math
from collections import Counter, OrderedDict
from dataclasses import dataclass, field

from trainers.grpo.advantages import group_advantages
from trainers.live.samples import LiveItem, LiveRow, LiveSample

TRAINED_LIMIT = 200_000  # trajectory ids remembered as trained


@dataclass
class RunningBaseline:
    """EMA of a task's rewards: mean and variance (West's exponentially weighted form)."""

    decay: float
    mean: float = 0.0
    var: float = 0.0
    count: int = 0

    def update(self, reward: float) -> None:
        if self.count == 0:
            self.mean, self.var = reward, 0.0
        else:
            delta = reward - self.mean
            self.mean += (1 - self.decay) * delta
            self.var = self.decay * (self.var + (1 - self.decay) * delta * delta)
        self.count += 1

    def advantage(self, reward: float, scale: bool, eps: float = 1e-6) -> float:
        a = reward - self.mean
        return a / (math.sqrt(self.var) + eps) if scale and self.var > eps else a


@dataclass
class _Group:
    first_at: float
    members: dict[str, LiveItem] = field(default_factory=dict)  # trajectory id -> its newest version

    def samples(self, key: str) -> list[LiveSample]:
        return [s for item in self.members.values() for s in item.samples if s.group_key == key]


class GroupAssembler:
    def __init__(self, group_size: int, group_wait_s: float, baseline_decay: float, scale: bool) -> None:
        self.group_size, self.group_wait_s, self.scale = group_size, group_wait_s, scale
        self.decay = baseline_decay
        self.groups: dict[str, _Group] = {}
        self.baselines: dict[str, RunningBaseline] = {}
        self.trained: OrderedDict[str, int] = OrderedDict()
        self.counts: Counter[str] = Counter()

    def add(self, item: LiveItem, now: float) -> None:
        if item.trajectory_id in self.trained:
            self.counts["already_trained"] += len(item.samples)
            return
        for key in {s.group_key for s in item.samples}:
            group = self.groups.setdefault(key, _Group(first_at=now))
            old = group.members.get(item.trajectory_id)
            if old is not None:
                if old.version >= item.version:
                    continue
                self.counts["superseded"] += 1
            group.members[item.trajectory_id] = item

    def forget(self, erased: set[str]) -> None:
        """Erased trajectories leave every group they wait in (an emptied group goes too)."""
        for key in list(self.groups):
            group = self.groups[key]
            for tid in erased & group.members.keys():
                del group.members[tid]
            if not group.members:
                del self.groups[key]

    def waiting(self) -> list[LiveItem]:
        """Items whose samples wait in a group (for checkpoints: they have not trained)."""
        seen: dict[str, LiveItem] = {}
        for g in self.groups.values():
            for tid, item in g.members.items():
                seen[tid] = item
        return list(seen.values())

    def waiting_samples(self) -> int:
        return sum(len(g.samples(k)) for k, g in self.groups.items())

    def take_ready(self, now: float) -> list[LiveRow]:
        """Rows of every ready group, with advantages; the groups leave the assembler."""
        rows: list[LiveRow] = []
        for key in list(self.groups):
            group = self.groups[key]
            samples = group.samples(key)
            if len(samples) < self.group_size and now - group.first_at < self.group_wait_s:
                continue
            del self.groups[key]
            rows.extend(self._advantages(samples))
            for tid, item in group.members.items():
                self.trained[tid] = item.version
                self.trained.move_to_end(tid)
        while len(self.trained) > TRAINED_LIMIT:
            self.trained.popitem(last=False)
        return rows

    def _advantages(self, samples: list[LiveSample]) -> list[LiveRow]:
        out: list[LiveRow] = []
        if len(samples) >= 2:
            adv = group_advantages([s.reward for s in samples], scale=self.scale)
            if all(a == 0 for a in adv):
                self.counts["zero_signal_groups"] += 1
                self.counts["zero_signal_samples"] += len(samples)
            else:
                self.counts["grouped_samples"] += len(samples)
                out = [LiveRow(sample=s, advantage=a) for s, a in zip(samples, adv, strict=True)]
        else:
            s = samples[0]
            base = self.baselines.get(s.baseline_key)
            if base is None or base.count == 0:
                self.counts["no_baseline_samples"] += 1
            else:
                a = base.advantage(s.reward, self.scale)
                self.counts["baseline_samples"] += 1
                if a != 0:
                    out = [LiveRow(sample=s, advantage=a)]
        for s in samples:
            self.baselines.setdefault(s.baseline_key, RunningBaseline(self.decay)).update(s.reward)
        return out
