"""Trajectory API: what the store knows of a tenant's landed trajectories (versions, rewards).

Read through the store's query client (``sinks.clients``: the running sink's endpoint, else the DuckDB
file read-only) with the caller's own API key, so the store scopes the rows to the caller's tenant; the
SQL names the tenant as well. Blocking: the router runs it in a thread.
"""

from __future__ import annotations

from typing import Any

from sinks.admin_key import ensure_admin_key
from sinks.clients import RoutedStoreClient
from sinks.exceptions import SinkError
from sinks.settings import SinkSettings
from sinks.views import quote_literal

VERSION_COLUMNS = (
    "version, status, step_count, reward, rewarded, reward_count, eligibility, replay_grade, "
    "policy_version, emitted_at"
)
REWARD_COLUMNS = "reward_id, name, kind, value, critique, source, step_index, created_at, first_version"


class StoreUnavailable(Exception):
    """The store could not be read (no sink and no database file yet, or it refused the query)."""


def _ids(tenant: str, trajectory_ids: list[str]) -> str:
    listed = ", ".join(quote_literal(t) for t in trajectory_ids)
    return f"tenant = {quote_literal(tenant)} AND trajectory_id IN ({listed})"


ROUTE_WAIT_S = 2.0  # a sink that is restarting: wait this long for it, then answer without the store


def _rows(store: SinkSettings, api_key: str | None, sqls: list[str]) -> list[list[dict[str, Any]]]:
    if not store.path(store.sink.database).exists():
        return [[] for _ in sqls]  # no sink ever ran: nothing landed
    try:
        client = RoutedStoreClient(store, api_key or ensure_admin_key(store), route_wait_s=ROUTE_WAIT_S)
    except (SinkError, OSError) as err:
        raise StoreUnavailable(str(err)) from None
    try:
        return [client.query(sql).read_all().to_pylist() for sql in sqls]
    except (SinkError, OSError) as err:
        raise StoreUnavailable(str(err)) from None
    finally:
        client.close()


def landed(store: SinkSettings, api_key: str | None, tenant: str, trajectory_id: str) -> dict[str, list]:
    """The trajectory's stored versions (oldest first) and rewards (by arrival); empty when not landed."""
    where = _ids(tenant, [trajectory_id])
    versions, rewards = _rows(
        store,
        api_key,
        [
            f"SELECT {VERSION_COLUMNS} FROM trajectory_versions WHERE {where} ORDER BY version",
            f"SELECT {REWARD_COLUMNS} FROM rewards WHERE {where} ORDER BY created_at, reward_id",
        ],
    )
    return {"versions": versions, "rewards": rewards}


def landed_ids(store: SinkSettings, api_key: str | None, tenant: str, trajectory_ids: list[str]) -> set[str]:
    """Which of these trajectories have at least one version in the store."""
    if not trajectory_ids:
        return set()
    sql = f"SELECT DISTINCT trajectory_id FROM trajectory_versions WHERE {_ids(tenant, trajectory_ids)}"
    return {r["trajectory_id"] for r in _rows(store, api_key, [sql])[0]}
