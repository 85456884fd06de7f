"""Wait until the demo's traffic has landed in DuckDB, then summarise it with SQL.

Everything here goes through the sink's query client (the running sink's loopback endpoint, else the
file), the same path `sluice query` takes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from sinks.base import StoreClient

SUMMARY_SQL: dict[str, str] = {
    "trajectories": "SELECT count(*) FROM trajectories WHERE trajectory_id IN ({ids})",
    "steps": "SELECT coalesce(sum(step_count), 0) FROM trajectories WHERE trajectory_id IN ({ids})",
    "eligible for training": (
        "SELECT count(*) FROM trajectories WHERE eligibility = 'train' AND trajectory_id IN ({ids})"
    ),
    "rewarded": "SELECT count(*) FROM trajectories WHERE rewarded AND trajectory_id IN ({ids})",
    "in the training set": "SELECT count(*) FROM training_set WHERE trajectory_id IN ({ids})",
    "versions (all)": "SELECT count(*) FROM trajectory_versions WHERE trajectory_id IN ({ids})",
    "dead letters": "SELECT count(*) FROM dead_letters",
}

BREAKDOWN_SQL: dict[str, str] = {
    "replay grades": (
        "SELECT replay_grade AS k, count(*) AS n FROM trajectories WHERE trajectory_id IN ({ids}) "
        "GROUP BY ALL ORDER BY n DESC"
    ),
    "eligibility": (
        "SELECT eligibility || ' (' || tenant || ')' AS k, count(*) AS n FROM trajectories "
        "WHERE trajectory_id IN ({ids}) GROUP BY ALL ORDER BY k"
    ),
    "redactions by type": (
        "SELECT k, sum(CAST(json_extract(entities, '$.\"' || k || '\"') AS BIGINT)) AS n FROM "
        "(SELECT entities, unnest(json_keys(entities)) AS k FROM redaction_reports WHERE trajectory_id IN ({ids})) "
        "GROUP BY ALL ORDER BY n DESC"
    ),
    "dead letters by stage and reason": (
        "SELECT stage || ': ' || left(reason, 60) AS k, count(*) AS n FROM dead_letters GROUP BY ALL ORDER BY n DESC"
    ),
}

EXAMPLE_QUERIES: tuple[str, ...] = (
    "SELECT tenant, count(*) AS trajectories, round(avg(reward), 2) AS avg_reward, sum(total_tokens) AS tokens "
    "FROM trajectories GROUP BY tenant ORDER BY tenant",
    "SELECT trajectory_id, version, reward, eligibility, replay_grade FROM trajectories "
    "WHERE versions > 1 ORDER BY trajectory_id LIMIT 5",
    "SELECT trajectory_id, step_index, left(CAST(new_messages AS VARCHAR), 90) AS new_messages FROM steps "
    "ORDER BY trajectory_id, step_index LIMIT 4",
)


def rows(client: StoreClient, sql: str) -> list[dict[str, Any]]:
    return client.query(sql).read_all().to_pylist()


def scalar(client: StoreClient, sql: str) -> Any:
    got = rows(client, sql)
    return next(iter(got[0].values())) if got else None


def id_list(ids: list[str]) -> str:
    return ", ".join("'" + i.replace("'", "''") + "'" for i in ids)


def wait_until(
    check: Callable[[], bool],
    timeout_s: float,
    what: str,
    poll_s: float = 0.5,
    on_wait: Callable[[], None] | None = None,
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        if on_wait:
            on_wait()
        time.sleep(poll_s)
    raise TimeoutError(f"timed out after {timeout_s:.0f}s waiting for {what}")


def landed(client: StoreClient, ids: list[str], min_version: dict[str, int] | None = None) -> bool:
    """All ``ids`` are queryable, and each id in ``min_version`` has reached that version."""
    got = rows(
        client, f"SELECT trajectory_id, version FROM trajectories WHERE trajectory_id IN ({id_list(ids)})"
    )
    have = {r["trajectory_id"]: r["version"] for r in got}
    if len(have) < len(set(ids)):
        return False
    return all(have.get(i, 0) >= v for i, v in (min_version or {}).items())


def summarise(client: StoreClient, ids: list[str]) -> dict[str, Any]:
    ids_sql = id_list(ids)
    out: dict[str, Any] = {name: scalar(client, sql.format(ids=ids_sql)) for name, sql in SUMMARY_SQL.items()}
    for name, sql in BREAKDOWN_SQL.items():
        out[name] = {str(r["k"]): int(r["n"]) for r in rows(client, sql.format(ids=ids_sql))}
    return out
