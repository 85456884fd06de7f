"""``sluice evolve explain``: what a proposal changed, why, on what evidence, each gate, what followed.

Reads the ``evolution_ledger`` view (the sink's copy of the ledger topic) through the store client.
"""

from __future__ import annotations

import json
from typing import Any

from pipeline.demo.summary import rows
from sinks.base import StoreClient
from sinks.views import quote_literal


def ledger_rows(client: StoreClient, proposal_id: str) -> list[dict[str, Any]]:
    return rows(
        client,
        f"SELECT * FROM evolution_ledger WHERE proposal_id = {quote_literal(proposal_id)} "
        "ORDER BY created_at, entry_id",
    )


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _overlay_lines(overlay: dict[str, Any] | None) -> list[str]:
    if not overlay:
        return ["    (the bare agent)"]
    out = [f"    overlay {overlay.get('overlay_id')} v{overlay.get('version')}"]
    out += [f"    + memory: {m.get('text')}" for m in overlay.get("memory") or []]
    out += [f"    + harness: {h.get('text')}" for h in overlay.get("harness_add") or []]
    out += [f"    - harness line {h}" for h in overlay.get("harness_remove") or []]
    for t in overlay.get("tools") or []:
        change = {k: v for k, v in t.items() if k != "tool" and v is not None}
        out.append(f"    ~ tool {t.get('tool')}: {json.dumps(change, sort_keys=True)}")
    return out


def _lineage_lines(lineage: dict[str, Any], show: int = 8) -> list[str]:
    """A weights proposal's data: the version, its parent, what it trained on."""
    items = lineage.get("items") or []
    out = [
        f"    policy v{lineage.get('version')} from v{lineage.get('parent')} ({lineage.get('promotion')}, "
        f"scope {lineage.get('scope')}): {lineage.get('samples')} rows of {len(items)} trajectory versions",
        f"    tenants: {json.dumps(lineage.get('tenants') or {}, sort_keys=True)}; reward sources: "
        f"{json.dumps(lineage.get('reward_sources') or {}, sort_keys=True)}",
    ]
    out += [
        f"    + {i.get('trajectory_id')} v{i.get('version')} ({i.get('samples')} rows)" for i in items[:show]
    ]
    if len(items) > show:
        out.append(f'    ... and {len(items) - show} more (sluice query "SELECT * FROM policy_lineage")')
    return out


def _numbers(numbers: dict[str, Any]) -> str:
    keep = {k: v for k, v in numbers.items() if v is not None and not isinstance(v, list | dict)}
    return ", ".join(f"{k}={round(v, 3) if isinstance(v, float) else v}" for k, v in keep.items())


def explain(entries: list[dict[str, Any]]) -> str:
    """A readable account of one proposal from its ledger rows (oldest first)."""
    if not entries:
        return "no ledger entries for this proposal"
    first = entries[0]
    scope = f"{first['tenant']}/{first.get('task_id') or '*'}"
    lines = [f"proposal {first['proposal_id']}  surface={first['surface']}  scope={scope}"]
    for e in entries:
        evidence, change = _json(e.get("evidence")) or {}, _json(e.get("diff")) or {}
        when = str(e.get("created_at"))[:19]
        head = f"{when}  {e['kind']}"
        if e.get("gate"):
            head += f" [{e['gate']}]"
            if e.get("passed") is not None:  # an undecided gate neither passed nor failed
                head += " passed" if e["passed"] else " failed"
        if e.get("decision"):
            head += f" -> {e['decision']}"
        lines.append(f"{head}  ({e.get('actor')})")
        if e.get("summary"):
            lines.append(f"    {e['summary']}")
        if e["kind"] == "proposal":
            proposal = change.get("proposal") or {}
            candidate = proposal.get("candidate") or change.get("candidate")
            cluster = proposal.get("cluster") or evidence.get("cluster") or {}
            if cluster:
                baseline = cluster.get("baseline_reward")
                lines.append(
                    f"    why: {cluster.get('signal')} cluster, {cluster.get('failures')}/{cluster.get('trajectories')}"
                    f" failing, mean reward {cluster.get('mean_reward')}"
                    + (f" vs {baseline} in the rest of the scope" if baseline is not None else "")
                    + (f"; {cluster['reason']}" if cluster.get("reason") else "")
                )
            lines.append("    what changes:")
            lineage = proposal.get("lineage")
            lines += _lineage_lines(lineage) if lineage else _overlay_lines(candidate)
        numbers = evidence.get("numbers") if isinstance(evidence, dict) else None
        if isinstance(numbers, dict):
            for key in ("reward", "calls_ok"):
                if isinstance(numbers.get(key), dict):
                    lines.append(f"    {key}: {_numbers(numbers[key])}")
            flat = _numbers(numbers)
            if flat:
                lines.append(f"    numbers: {flat}")
            if numbers.get("probes_failed"):
                lines.append(f"    probes failed: {numbers['probes_failed']}")
        if "after" in change:
            before, after = change.get("before") or {}, change["after"] or {}
            if after.get("active_policy") or after.get("candidate_policy") or before.get("active_policy"):
                lines.append(
                    f"    policy: active v{before.get('active_policy')} -> v{after.get('active_policy')}, "
                    f"candidate v{after.get('candidate_policy')} at {after.get('canary_share')}"
                )
            else:
                lines.append(
                    f"    assignment: active {(before.get('active') or {}).get('overlay_id')} -> "
                    f"{(after.get('active') or {}).get('overlay_id')}, candidate "
                    f"{(after.get('candidate') or {}).get('overlay_id')} at {after.get('canary_share')}"
                )
    return "\n".join(lines)
