"""What the gates read from DuckDB, through the store client: recorded trajectories of a scope with
their steps and replay grades, live outcomes per canary arm, and the ledger.

Every query a gate runs is returned with its rows, so the ledger entry can carry the query and the
numbers it gave (``Evidence``).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict

from pipeline.demo.summary import id_list, rows
from sinks.base import StoreClient
from sinks.views import quote_literal
from sluice.events import Message, StepEvent, Trajectory, reconstruct_messages
from sluice.evolution import ALL_TENANTS, Evidence


class RecordedPrompt(BaseModel):
    """The last model call of a recorded trajectory, rebuilt as the chat body the agent sent."""

    model_config = ConfigDict(frozen=True)

    trajectory: Trajectory
    body: dict[str, Any]
    reward: float | None = None
    replay_grade: str | None = None


def scope_condition(tenant: str, task_id: str | None, alias: str = "t") -> str:
    """Rows of trajectories in a scope: the tenant's (every tenant's for ``*``), and with a step of the
    task when one is named."""
    every = tenant == ALL_TENANTS
    cond = "TRUE" if every else f"{alias}.tenant = {quote_literal(tenant)}"
    if task_id is not None:
        of_tenant = "" if every else f"tenant = {quote_literal(tenant)} AND "
        cond += (
            f" AND {alias}.trajectory_id IN (SELECT trajectory_id FROM steps WHERE "
            f"{of_tenant}task_id = {quote_literal(task_id)})"
        )
    return cond


def query(client: StoreClient, sql: str) -> tuple[list[dict[str, Any]], Evidence]:
    got = rows(client, sql)
    return got, Evidence(query=" ".join(sql.split()), numbers={"rows": len(got)})


def scope_trajectories(
    client: StoreClient,
    tenant: str,
    task_id: str | None,
    *,
    ids: list[str] | None = None,
    exclude: list[str] | None = None,
    rewarded: bool = False,
    limit: int = 100,
) -> tuple[list[dict[str, Any]], Evidence]:
    """Latest versions of the scope's trajectories (newest first): id, reward, replay grade."""
    cond = scope_condition(tenant, task_id)
    if ids is not None:
        cond += f" AND t.trajectory_id IN ({id_list(ids) or 'NULL'})"
    if exclude:
        cond += f" AND t.trajectory_id NOT IN ({id_list(exclude)})"
    if rewarded:
        cond += " AND t.rewarded AND t.reward IS NOT NULL"
    sql = (
        "SELECT t.trajectory_id, t.tenant, t.reward, t.rewarded, t.replay_grade FROM trajectories t "
        f"WHERE {cond} ORDER BY t.ended_at DESC NULLS LAST, t.trajectory_id LIMIT {int(limit)}"
    )
    return query(client, sql)


def grade_counts(found: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for row in found:
        grade = row.get("replay_grade") or "ungraded"
        out[grade] = out.get(grade, 0) + 1
    return out


def _record(value: Any) -> dict[str, Any]:
    return json.loads(value) if isinstance(value, str | bytes) else dict(value)


def load_steps(client: StoreClient, ids: list[str]) -> dict[str, list[StepEvent]]:
    """Each trajectory's stored steps, as events, in order."""
    if not ids:
        return {}
    got = rows(
        client,
        f"SELECT trajectory_id, step_index, record FROM steps WHERE trajectory_id IN ({id_list(ids)}) "
        "ORDER BY trajectory_id, step_index",
    )
    out: dict[str, list[StepEvent]] = {}
    for row in got:
        out.setdefault(row["trajectory_id"], []).append(StepEvent.model_validate(_record(row["record"])))
    return out


def _message(m: Message) -> dict[str, Any]:
    return m.model_dump(mode="json", exclude_none=True)


def _calls_tool(step: StepEvent, tool: str) -> bool:
    return any(c.name == tool for ch in step.action.choices for c in (ch.message.tool_calls or []))


def chat_body(steps: list[StepEvent], tool: str | None = None) -> dict[str, Any] | None:
    """The chat body of the trajectory's last model call (with ``tool``: of the last call that called that
    tool, the call a tool cluster's fix must change), rebuilt from the recorded deltas, with its tools and
    forced ``tool_choice``; None when it has no such call."""
    chats = [s for s in steps if s.action.choices and s.metadata.gen_ai.operation_name == "chat"]
    if tool is not None:
        chats = [s for s in chats if _calls_tool(s, tool)]
    if not chats:
        return None
    last = chats[-1]
    upto = [s for s in steps if s.step_index <= last.step_index]
    history = reconstruct_messages([s for s in upto if s.action.choices])
    messages = [_message(m) for m in history[:-1]]
    if not messages:
        return None
    body: dict[str, Any] = {"model": last.metadata.gen_ai.request_model, "messages": messages}
    tools = next((s.observation.tools for s in reversed(upto) if s.observation.tools), None)
    if tools:
        body["tools"] = tools
        choice = (last.metadata.sampling.model_extra or {}).get("tool_choice")
        if choice is not None:
            body["tool_choice"] = choice
    if last.metadata.sampling.max_tokens:
        body["max_tokens"] = last.metadata.sampling.max_tokens
    return body


def recorded_prompts(
    client: StoreClient, tenant: str, found: list[dict[str, Any]], tool: str | None = None
) -> list[RecordedPrompt]:
    """The rebuilt last call of each found trajectory (``tool``: its last call to that tool); those
    without one are skipped."""
    steps = load_steps(client, [r["trajectory_id"] for r in found])
    out = []
    for row in found:
        tid = row["trajectory_id"]
        body = chat_body(steps.get(tid, []), tool)
        if body is None:
            continue
        owner = row.get("tenant") or tenant
        traj = Trajectory(trajectory_id=tid, tenant=owner, steps=steps[tid], reward=row.get("reward"))
        out.append(
            RecordedPrompt(
                trajectory=traj, body=body, reward=row.get("reward"), replay_grade=row.get("replay_grade")
            )
        )
    return out


def scope_system_prompt(client: StoreClient, tenant: str, task_id: str | None) -> list[dict[str, Any]]:
    """The system message(s) the scope's agent sends (from its newest step that has one)."""
    cond = scope_condition(tenant, task_id, alias="s")
    got = rows(
        client,
        "SELECT CAST(new_messages AS VARCHAR) AS m FROM steps s "
        f'WHERE {cond} AND json_contains(CAST(new_messages AS VARCHAR), \'{{"role":"system"}}\') '
        "ORDER BY created_at DESC LIMIT 1",
    )
    if not got or not got[0]["m"]:
        return []
    return [
        m for m in json.loads(got[0]["m"]) if isinstance(m, dict) and m.get("role") in ("system", "developer")
    ]
