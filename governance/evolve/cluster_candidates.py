"""Candidate failure clusters: the trajectories each one holds and the rest of its scope to compare with.

Outcomes first: a trajectory is *judged* when it has any outcome signal (a reward, feedback, a backend
error, a tool call) and *failed* when one of them says so; a *silent* failure is one with no tool or
backend error (a wrong or empty answer). Then three kinds of candidate, each with its comparison group:
``tool`` (one tool, one error signature, in one tenant/task), ``scope`` (a tenant/task's silent failures)
and ``upstream`` (one backend status or error in a tenant). ``diagnosis`` tests and maps them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from governance.evolve.diagnosis_config import DiagnosisConfig
from governance.evolve.diagnosis_rows import (
    ToolCallRow,
    TrajectoryRow,
    error_signature,
    upstream_signature,
)
from governance.evolve.significance import SignificanceResult


@dataclass
class Outcome:
    judged: bool
    failed: bool
    silent: bool  # failed with no tool or backend error
    markers: set[str]


@dataclass
class Candidate:
    kind: str
    key: tuple
    tenant: str | None
    task_id: str | None
    tool: str | None
    error: str | None
    members: list[str]
    rest: list[str]
    scope: str
    silent_only: bool = False
    result: SignificanceResult | None = None
    why_dismissed: str = ""
    extra: dict = field(default_factory=dict)


class RowIndex:
    def __init__(self, rows: Iterable[TrajectoryRow], calls: Iterable[ToolCallRow], cfg: DiagnosisConfig):
        self.rows = {r.trajectory_id: r for r in rows}
        self.calls: dict[str, list[ToolCallRow]] = {}
        for c in calls:
            if c.trajectory_id in self.rows:
                self.calls.setdefault(c.trajectory_id, []).append(c)
        self.outcomes = {tid: self._outcome(r, cfg) for tid, r in self.rows.items()}

    def _outcome(self, row: TrajectoryRow, cfg: DiagnosisConfig) -> Outcome:
        markers: set[str] = set()
        if row.reward is not None and row.reward < cfg.failure_reward_below:
            markers.add("reward")
        if any(f in cfg.negative_feedback for f in row.feedback):
            markers.add("feedback")
        if upstream_signature(row) is not None:
            markers.add("error")
        calls = sorted(self.calls.get(row.trajectory_id, []), key=lambda c: c.step_index)
        last: dict[str, ToolCallRow] = {c.tool: c for c in calls}
        if any(c.failed for c in last.values()):
            markers.add("tool_error")
        judged = row.reward is not None or bool(row.feedback) or "error" in markers or bool(calls)
        any_tool_error = any(c.failed for c in calls)
        silent = bool(markers & {"reward", "feedback"}) and not any_tool_error and "error" not in markers
        return Outcome(judged=judged, failed=bool(markers), silent=silent, markers=markers)

    def judged(self, pred) -> list[str]:  # noqa: ANN001
        return [tid for tid, r in self.rows.items() if self.outcomes[tid].judged and pred(r)]

    def failures(self, ids: list[str], silent_only: bool) -> int:
        o = self.outcomes
        return sum(1 for t in ids if (o[t].silent if silent_only else o[t].failed))


def tool_candidates(ix: RowIndex) -> list[Candidate]:
    groups: dict[tuple, set[str]] = {}
    for tid, calls in ix.calls.items():
        row = ix.rows[tid]
        for c in calls:
            if c.failed:
                key = ("tool", row.tenant, row.task_id, c.tool, error_signature(c.result, c.code))
                groups.setdefault(key, set()).add(tid)
    out = []
    for key, members in groups.items():
        _, tenant, task, tool, sig = key
        scope = ix.judged(lambda r, tenant=tenant, task=task: r.tenant == tenant and r.task_id == task)
        out.append(
            Candidate(
                kind="tool", key=key, tenant=tenant, task_id=task, tool=tool, error=sig,
                members=sorted(members), rest=[t for t in scope if t not in members],
                scope=f"tenant {tenant}, task {task or '-'}",
            )
        )  # fmt: skip
    return out


def scope_candidates(ix: RowIndex) -> list[Candidate]:
    scopes = sorted({(r.tenant, r.task_id) for r in ix.rows.values()}, key=lambda s: (s[0], s[1] or ""))
    out = []
    for tenant, task in scopes:
        members = ix.judged(lambda r, tenant=tenant, task=task: r.tenant == tenant and r.task_id == task)
        if task is None:
            rest = ix.judged(lambda r, tenant=tenant: r.tenant != tenant)
            where = f"tenant {tenant} (no task id) against the other tenants"
        else:
            rest = ix.judged(lambda r, tenant=tenant, task=task: r.tenant == tenant and r.task_id != task)
            where = f"tenant {tenant}, task {task} against the tenant's other tasks"
        out.append(
            Candidate(
                kind="scope", key=("scope", tenant, task), tenant=tenant, task_id=task, tool=None,
                error=None, members=members, rest=rest, scope=where, silent_only=True,
            )
        )  # fmt: skip
    return out


def upstream_candidates(ix: RowIndex) -> list[Candidate]:
    groups: dict[tuple, list[str]] = {}
    for tid, row in ix.rows.items():
        sig = upstream_signature(row)
        if sig is not None:
            groups.setdefault(("upstream", row.tenant, sig), []).append(tid)
    out = []
    for key, members in groups.items():
        _, tenant, sig = key
        rest = ix.judged(
            lambda r, tenant=tenant, m=set(members): r.tenant == tenant and r.trajectory_id not in m
        )
        out.append(
            Candidate(
                kind="upstream", key=key, tenant=tenant, task_id=None, tool=None, error=sig,
                members=sorted(members), rest=rest, scope=f"tenant {tenant}",
            )
        )  # fmt: skip
    return out
