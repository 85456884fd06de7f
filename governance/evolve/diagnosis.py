"""Diagnosis: failure clusters from trajectory and tool-call rows, each tested and mapped to a surface.

A trajectory *failed* when its reward is below ``failure_reward_below``, it received negative feedback,
its backend call failed, or a tool it called still failed on its last call (the agent never recovered).
Candidate clusters, each compared with the rest of its scope:

- **tool**: trajectories whose calls to one tool fail with one error signature, in one tenant/task,
  against the other trajectories of that tenant/task. Argument-format and validation errors map to a
  tool-schema change; calls to tools that do not exist (routing) and other tool failures to a harness item.
- **scope**: a tenant/task whose *silent* failures (low reward or negative feedback with no tool or backend
  error: wrong answers, "I don't know") exceed the tenant's other tasks (a tenant without task ids: the
  other tenants). Those map to memory: the agent lacks a fact it could only know if told. When the same
  task fails that way in several tenants and under several harness versions, the clusters merge into one
  weights cluster: no tenant's context is missing it, the policy is.
- **upstream**: trajectories whose backend call failed with one status or error, against the tenant's
  others: no overlay or weight fixes a failing backend, so they map to no-op with that reason.

A candidate needs ``min_trajectories`` and ``min_failures``; the candidates that have them are tested
(``significance``: a one-sided two-proportion z-test against the rest of the scope, or a Wilson bound
against the tolerated failure rate when the scope has no rest) and Holm-adjusted together. The ones that
fail are returned as dismissed, surface no-op, with their numbers. Pure: rows in, clusters out.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from governance.evolve.cluster_candidates import (
    Candidate,
    RowIndex,
    scope_candidates,
    tool_candidates,
    upstream_candidates,
)
from governance.evolve.diagnosis_config import DiagnosisConfig
from governance.evolve.diagnosis_rows import (
    ToolCallRow,
    TrajectoryRow,
    error_signature,
)
from governance.evolve.significance import (
    holm,
    two_proportion_z,
    wilson_interval,
    wilson_vs_tolerance,
)
from sluice.evolution import Evidence, FailureCluster, Surface

_ROUTING = re.compile(
    r"unknown (tool|function)|no such (tool|function)|no tool named|not a valid tool|tool .{0,40}not found"
    r"|is not (a )?(declared|available|registered)|undefined (tool|function)|unsupported tool"
)
_FORMAT = re.compile(
    r"invalid|format|schema|validat|expected|must be|must match|pattern|malformed|parse|json|required"
    r"|missing (argument|parameter|field|property)|type ?error|wrong type|not (a )?(valid|iso)|usage"
)


class Diagnosis(BaseModel):
    model_config = ConfigDict(frozen=True)

    clusters: list[FailureCluster] = Field(description="Significant clusters, each with its surface.")
    dismissed: list[FailureCluster] = Field(
        default_factory=list, description="Candidates without enough evidence: surface noop, with why."
    )
    trajectories: int = 0
    judged: int = Field(0, description="Trajectories with any outcome signal.")
    failed: int = 0


def tool_surface(signature: str) -> tuple[Surface, str]:
    """Harness or tool schema for a tool error, with the reason."""
    if _ROUTING.search(signature):
        return "harness", (
            "wrong tool routing: the agent calls a tool that does not exist; a harness item can name "
            "the right one"
        )
    if _FORMAT.search(signature) or signature.startswith("exit 2"):
        return "tool_schema", (
            "argument format: the tool rejects the arguments the agent sends; constraining the "
            "parameter's schema and description shows the format it expects"
        )
    return "harness", "the tool fails when called this way; a harness item can say how to call it"


def _test(ix: RowIndex, cands: list[Candidate], cfg: DiagnosisConfig) -> None:
    tested: list[Candidate] = []
    for c in cands:
        k = ix.failures(c.members, c.silent_only)
        if len(c.members) < cfg.min_trajectories or k < cfg.min_failures:
            c.why_dismissed = (
                f"too little evidence: {k} failed of {len(c.members)} "
                f"(needs {cfg.min_failures} of at least {cfg.min_trajectories})"
            )
            continue
        if len(c.rest) >= cfg.min_trajectories:
            c.result = two_proportion_z(k, len(c.members), ix.failures(c.rest, c.silent_only), len(c.rest))
        else:
            c.result = wilson_vs_tolerance(k, len(c.members), cfg.tolerated_failure_rate, cfg.alpha)
        tested.append(c)
    for c, ok in zip(tested, holm([c.result.p_value for c in tested], cfg.alpha), strict=True):
        if not ok:
            c.why_dismissed = (
                f"not significant: p={c.result.p_value:.3g} ({c.result.test}) at family-wise "
                f"alpha {cfg.alpha} over {len(tested)} candidates"
            )


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _numbers(ix: RowIndex, c: Candidate, cfg: DiagnosisConfig) -> dict:
    rows = [ix.rows[t] for t in c.members]
    k, n = ix.failures(c.members, c.silent_only), len(c.members)
    k_rest = ix.failures(c.rest, c.silent_only)
    low, high = wilson_interval(k, n, cfg.alpha)
    failed_rows = [
        r
        for r in rows
        if (ix.outcomes[r.trajectory_id].silent if c.silent_only else ix.outcomes[r.trajectory_id].failed)
    ]
    nums = {
        "scope": c.scope,
        "trajectories": n,
        "failures": k,
        "failure_rate": round(k / n, 4) if n else None,
        "failure_rate_wilson": [round(low, 4), round(high, 4)],
        "rest_trajectories": len(c.rest),
        "rest_failures": k_rest,
        "rest_failure_rate": round(k_rest / len(c.rest), 4) if c.rest else None,
        "failure_counts": "silent failures only (no tool or backend error)"
        if c.silent_only
        else "all failures",
        "markers": dict(
            Counter(m for r in failed_rows for m in sorted(ix.outcomes[r.trajectory_id].markers))
        ),
        "harness_fingerprints": dict(Counter(r.harness_fingerprint or "-" for r in failed_rows)),
        "overlays": dict(Counter(f"{r.overlay_id or '-'}:{r.overlay_arm or '-'}" for r in rows)),
        "model_versions": dict(Counter(r.model_version or "-" for r in rows)),
        "feedback": dict(Counter(f for r in rows for f in r.feedback)),
        "critiques": sum(len(r.critiques) for r in rows),
    }
    if c.result is not None:
        nums.update(test=c.result.test, statistic=round(c.result.statistic, 4), p_value=c.result.p_value)
    return nums


def _tool_numbers(ix: RowIndex, c: Candidate) -> dict:
    calls = [x for t in ix.rows for x in ix.calls.get(t, []) if x.tool == c.tool and ix.rows[t].tenant == c.tenant
             and ix.rows[t].task_id == c.task_id]  # fmt: skip
    bad = [x for x in calls if x.failed and error_signature(x.result, x.code) == c.error]
    return {
        "tool": c.tool,
        "calls": len(calls),
        "failed_calls": len(bad),
        "ok_calls": sum(1 for x in calls if not x.failed),
        "exit_codes": dict(Counter(str(x.code) for x in bad if x.code is not None)),
        "error_examples": list(dict.fromkeys((x.result or "")[:200] for x in bad))[:3],
        "failing_arguments": list(dict.fromkeys((x.arguments or "")[:200] for x in bad))[:3],
    }


def _cluster(ix: RowIndex, c: Candidate, cfg: DiagnosisConfig, queries: dict[str, str], surface: Surface,
             reason: str, signal: str) -> FailureCluster:  # fmt: skip
    rows = [ix.rows[t] for t in c.members]
    rest = [ix.rows[t] for t in c.rest]
    failed = [t for t in c.members if ix.outcomes[t].failed]
    evidence = [Evidence(query=queries.get("trajectories", "trajectories"), numbers=_numbers(ix, c, cfg))]
    if c.kind == "tool":
        evidence.append(Evidence(query=queries.get("tool_calls", "tool_calls"), numbers=_tool_numbers(ix, c)))
    digest = hashlib.sha256(repr(c.key).encode()).hexdigest()[:12]
    return FailureCluster(
        cluster_id=f"cl-{digest}",
        tenant=c.tenant,
        task_id=c.task_id,
        tool=c.tool,
        error=c.error,
        signal=signal,
        trajectories=len(c.members),
        failures=ix.failures(c.members, c.silent_only),
        mean_reward=_mean([r.reward for r in rows if r.reward is not None]),
        baseline_reward=_mean([r.reward for r in rest if r.reward is not None]),
        sample_trajectory_ids=(failed + [t for t in c.members if t not in failed])[: cfg.max_samples],
        evidence=evidence,
        surface=surface,
        reason=reason,
    )


def _signal(ix: RowIndex, c: Candidate) -> str:
    if c.kind == "tool":
        return "tool_error"
    if c.kind == "upstream":
        return "error"
    marks = Counter(m for t in c.members if ix.outcomes[t].silent for m in ix.outcomes[t].markers)
    return "feedback" if marks["feedback"] > marks["reward"] else "reward"


def _weights_groups(ix: RowIndex, sig: list[Candidate], cfg: DiagnosisConfig) -> dict[str, list[Candidate]]:
    by_task: dict[str, list[Candidate]] = {}
    for c in sig:
        if c.kind == "scope" and c.task_id is not None:
            by_task.setdefault(c.task_id, []).append(c)
    out = {}
    for task, group in by_task.items():
        harnesses = {
            ix.rows[t].harness_fingerprint for c in group for t in c.members if ix.outcomes[t].silent
        }
        if (
            len({c.tenant for c in group}) >= cfg.weights_min_tenants
            and len(harnesses) >= cfg.weights_min_harnesses
        ):
            out[task] = group
    return out


def diagnose(
    trajectories: Iterable[TrajectoryRow],
    tool_calls: Iterable[ToolCallRow],
    cfg: DiagnosisConfig,
    queries: dict[str, str] | None = None,
) -> Diagnosis:
    """Failure clusters of the rows. ``queries`` names the SQL each row set came from (for the evidence)."""
    queries = queries or {}
    ix = RowIndex(trajectories, tool_calls, cfg)
    cands = [*tool_candidates(ix), *scope_candidates(ix), *upstream_candidates(ix)]
    _test(ix, cands, cfg)
    sig = [c for c in cands if not c.why_dismissed]
    weights = _weights_groups(ix, sig, cfg)
    merged = {id(c) for group in weights.values() for c in group}
    clusters: list[FailureCluster] = []
    for c in sig:
        if id(c) in merged:
            continue
        signal = _signal(ix, c)
        if c.kind == "tool":
            surface, reason = tool_surface(c.error or "")
        elif c.kind == "upstream":
            surface, reason = (
                "noop",
                (
                    f"the backend call itself failed ({c.error}): no overlay or weight update fixes that; "
                    "check the backend"
                ),
            )
        else:
            surface, reason = (
                "memory",
                (
                    f"missing fact: failures concentrate in {c.scope} with no tool or backend error (wrong or "
                    "empty answers); a memory entry can tell the agent what it cannot know"
                ),
            )
        clusters.append(_cluster(ix, c, cfg, queries, surface, reason, signal))
    for task, group in weights.items():
        members = sorted({t for c in group for t in c.members})
        tenants = sorted({c.tenant for c in group if c.tenant})
        whole = Candidate(
            kind="scope", key=("weights", task), tenant=None, task_id=task, tool=None, error=None,
            members=members, rest=sorted({t for c in group for t in c.rest}),
            scope=f"task {task} in tenants {', '.join(tenants)}", silent_only=True,
            result=min((c.result for c in group if c.result), key=lambda r: r.p_value, default=None),
        )  # fmt: skip
        cl = _cluster(ix, whole, cfg, queries, "weights", "", _signal(ix, whole))
        harnesses = cl.evidence[0].numbers["harness_fingerprints"]
        per_tenant = [Evidence(query=queries.get("trajectories", "trajectories"), numbers=_numbers(ix, c, cfg))
                      for c in group]  # fmt: skip
        clusters.append(
            cl.model_copy(
                update={
                    "evidence": [*cl.evidence, *per_tenant],
                    "reason": (
                        f"the failure persists across {len(tenants)} tenants and {len(harnesses)} harness "
                        "versions with no tool error: no tenant's context lacks it, the policy does "
                        "(a weight update)"
                    ),
                }
            )
        )
    dismissed = [
        _cluster(ix, c, cfg, queries, "noop", c.why_dismissed, _signal(ix, c))
        for c in cands
        if c.why_dismissed and ix.failures(c.members, c.silent_only)
    ]
    outcomes = ix.outcomes.values()
    return Diagnosis(
        clusters=sorted(clusters, key=lambda c: (-c.failures, c.cluster_id)),
        dismissed=sorted(dismissed, key=lambda c: (-c.failures, c.cluster_id)),
        trajectories=len(ix.rows),
        judged=sum(1 for o in outcomes if o.judged),
        failed=sum(1 for o in outcomes if o.failed),
    )
