"""Staleness of live samples, in policy versions: the learner's version minus the version that served the step.

Checked when a batch is about to train, so a reward that arrives days after its steps is used when those
steps are still within ``max_staleness`` versions of the learner and counted as too stale otherwise. A
step that names no integer version (a backend that reports none, or the config string) has unknown
staleness: it is left out and counted apart (``unknown_version``). Within the bound a sample weighs 1;
beyond it ``stale_policy`` drops it or down-weights it by ``stale_decay ** (lag - max_staleness)``
(``staleness_weight``). A version ahead of the learner (a server that kept a newer version across a learner
restart) counts as lag 0.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

from trainers.grpo.advantages import staleness_weight
from trainers.live.samples import LiveRow


def in_scope(rows: list[LiveRow], scope: str, base: tuple[str, int]) -> tuple[list[LiveRow], Counter[str]]:
    """The rows whose serving version belongs to ``scope``'s line, numbered in it. A step served by the
    base version (``base``: the shared line's version every own line starts from) counts as version 0 of
    an own line; a step another scope's version served is left out (``other_scope``): its behaviour
    policy is not on this line, and a step served by tenant A's version never trains tenant B's."""
    kept: list[LiveRow] = []
    counts: Counter[str] = Counter()
    for row in rows:
        s = row.sample
        if s.policy_version is None or s.policy_scope in (None, scope):
            kept.append(row)
        elif (s.policy_scope, s.policy_version) == base:
            kept.append(row.model_copy(update={"sample": s.model_copy(update={"policy_version": 0})}))
        else:
            counts["other_scope"] += 1
    return kept, counts


def apply_staleness(
    rows: list[LiveRow],
    learner_version: int,
    max_staleness: int,
    policy: Literal["drop", "downweight"],
    decay: float,
) -> tuple[list[LiveRow], Counter[str], list[int]]:
    """(rows kept with their weights, counts, the lag of every row with a known version)."""
    kept: list[LiveRow] = []
    counts: Counter[str] = Counter()
    lags: list[int] = []
    for row in rows:
        v = row.sample.policy_version
        if v is None:
            counts["unknown_version"] += 1
            continue
        lag = max(0, learner_version - v)
        lags.append(lag)
        w = staleness_weight(lag, max_staleness, policy, decay)
        if w is None:
            counts["dropped_stale"] += 1
            continue
        if w < 1:
            counts["downweighted"] += 1
        kept.append(row.model_copy(update={"weight": row.weight * w}))
    return kept, counts, lags
