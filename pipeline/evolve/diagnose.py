"""The store side of diagnosis: the SQL that fills diagnosis rows, one query per concern, through the
same store client ``sluice query`` uses (the running sink's endpoint, else the file; a tenant's key sees
its own rows only).

- ``trajectories``: one row per trajectory (latest version) with its reward and what its steps record:
  task, harness fingerprint, overlay and arm, model version, the first backend error, the final answer;
- ``feedback``: feedback signal names and critique texts per trajectory, from the rewards view;
- ``tool_calls``: one row per answered tool call, its arguments and the result the agent got back;
- ``declared_tools``: the newest declaration of each tool per tenant/task (what a schema change edits).

    sluice evolve propose
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from governance.evolve.diagnosis import Diagnosis, diagnose
from governance.evolve.diagnosis_config import DiagnosisConfig
from governance.evolve.diagnosis_rows import ToolCallRow, TrajectoryRow
from sinks.base import StoreClient

_WINDOW = "coalesce(ended_at, emitted_at) >= now() - INTERVAL ({hours}) HOUR"

TRAJECTORIES_SQL = """
WITH recent AS (
    SELECT trajectory_id, tenant, reward FROM trajectories WHERE {window}
), s AS (
    SELECT trajectory_id, step_index, task_id, harness_fingerprint, overlay_id, overlay_arm, model_version,
           error, status_code, finish_reason, completion ->> '$.content' AS answer,
           list_filter(from_json(new_messages, '[{{"role": "VARCHAR", "content": "JSON"}}]'),
                       lambda m: m.role = 'user')[1].content AS user_content
    FROM steps WHERE trajectory_id IN (SELECT trajectory_id FROM recent)
)
SELECT r.trajectory_id, r.tenant, r.reward,
       any_value(s.task_id) AS task_id,
       arg_min(s.harness_fingerprint, s.step_index) AS harness_fingerprint,
       arg_max(s.overlay_id, s.step_index) AS overlay_id,
       arg_max(s.overlay_arm, s.step_index) AS overlay_arm,
       arg_max(s.model_version, s.step_index) AS model_version,
       arg_min(s.error, s.step_index) AS error,
       max(s.status_code) FILTER (WHERE s.status_code >= 400) AS status_code,
       arg_max(s.finish_reason, s.step_index) AS finish_reason,
       arg_max(s.answer, s.step_index) AS final_answer,
       arg_min(CASE WHEN json_type(s.user_content) = 'VARCHAR' THEN s.user_content ->> '$'
                    ELSE s.user_content::VARCHAR END, s.step_index) AS question
FROM recent r JOIN s USING (trajectory_id)
GROUP BY r.trajectory_id, r.tenant, r.reward
ORDER BY r.trajectory_id"""

FEEDBACK_SQL = """
SELECT trajectory_id,
       list(name ORDER BY created_at) FILTER (WHERE kind = 'feedback') AS feedback,
       list(critique ORDER BY created_at) FILTER (WHERE critique IS NOT NULL AND critique <> '') AS critiques
FROM rewards
WHERE (kind = 'feedback' OR critique IS NOT NULL)
  AND trajectory_id IN (SELECT trajectory_id FROM trajectories WHERE {window})
GROUP BY trajectory_id"""

TOOL_CALLS_SQL = """
WITH r AS (
    SELECT trajectory_id, step_index,
           unnest(from_json(tool_results, '[{{"tool_call_id": "VARCHAR", "tool_name": "VARCHAR",
               "content": "JSON", "exit_code": "INTEGER", "is_error": "BOOLEAN"}}]')) AS res,
           from_json(tool_calls, '[{{"id": "VARCHAR", "name": "VARCHAR", "arguments": "VARCHAR"}}]') AS calls
    FROM steps
    WHERE json_array_length(tool_results) > 0
      AND trajectory_id IN (SELECT trajectory_id FROM trajectories WHERE {window})
)
SELECT trajectory_id, step_index, res.tool_name AS tool, coalesce(res.is_error, false) AS is_error,
       res.exit_code AS exit_code,
       CASE WHEN json_type(res.content) = 'VARCHAR' THEN res.content ->> '$'
            ELSE res.content::VARCHAR END AS result,
       list_filter(calls, lambda c: c.id = res.tool_call_id)[1].arguments AS arguments
FROM r WHERE res.tool_name IS NOT NULL
ORDER BY trajectory_id, step_index"""

DECLARED_TOOLS_SQL = """
SELECT tenant, task_id, tool
FROM (SELECT tenant, task_id, created_at,
             unnest(from_json(json_extract(record, '$.observation.tools'), '["JSON"]')) AS tool
      FROM steps
      WHERE json_type(json_extract(record, '$.observation.tools')) = 'ARRAY'
        AND trajectory_id IN (SELECT trajectory_id FROM trajectories WHERE {window}))
ORDER BY created_at"""


def _window(cfg: DiagnosisConfig) -> str:
    return "TRUE" if cfg.window_hours is None else _WINDOW.format(hours=float(cfg.window_hours))


def _rows(client: StoreClient, sql: str) -> list[dict[str, Any]]:
    return client.query(sql).read_all().to_pylist()


class StoreRows(BaseModel):
    """What the store gave diagnosis and the proposers, with the SQL that gave it."""

    model_config = ConfigDict(frozen=True)

    trajectories: list[TrajectoryRow]
    tool_calls: list[ToolCallRow]
    declared_tools: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="'tenant/task/tool' -> the newest OpenAI tool declaration."
    )
    queries: dict[str, str]


def declared_tool_key(tenant: str, task_id: str | None, tool: str) -> str:
    return f"{tenant}/{task_id or '*'}/{tool}"


def read_rows(client: StoreClient, cfg: DiagnosisConfig) -> StoreRows:
    """Run the diagnosis queries and turn their results into rows."""
    window = _window(cfg)
    queries = {
        "trajectories": TRAJECTORIES_SQL.format(window=window).strip(),
        "feedback": FEEDBACK_SQL.format(window=window).strip(),
        "tool_calls": TOOL_CALLS_SQL.format(window=window).strip(),
        "declared_tools": DECLARED_TOOLS_SQL.format(window=window).strip(),
    }
    signals = {r["trajectory_id"]: r for r in _rows(client, queries["feedback"])}
    trajectories = []
    for r in _rows(client, queries["trajectories"]):
        sig = signals.get(r["trajectory_id"], {})
        trajectories.append(
            TrajectoryRow(**r, feedback=sig.get("feedback") or [], critiques=sig.get("critiques") or [])
        )
    calls = [ToolCallRow(**r) for r in _rows(client, queries["tool_calls"])]
    declared: dict[str, dict[str, Any]] = {}
    for r in _rows(client, queries["declared_tools"]):
        try:
            tool = json.loads(r["tool"]) if isinstance(r["tool"], str) else r["tool"]
        except ValueError:
            continue
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            declared[declared_tool_key(r["tenant"], r["task_id"], fn["name"])] = tool
    return StoreRows(trajectories=trajectories, tool_calls=calls, declared_tools=declared, queries=queries)


def run_diagnosis(client: StoreClient, cfg: DiagnosisConfig) -> tuple[Diagnosis, StoreRows]:
    """Failure clusters of the store's recent trajectories, and the rows they came from."""
    rows = read_rows(client, cfg)
    return diagnose(rows.trajectories, rows.tool_calls, cfg, rows.queries), rows
