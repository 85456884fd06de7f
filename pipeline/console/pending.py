"""Trajectories that have not landed yet, for the console: asked of the proxy (``GET /v1/trajectories
?state=pending``) with the signed-in key, since only the proxy knows a trajectory before the sink stores
it. An operator session asks once per tenant key the store knows (each answer is that tenant's own).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from sinks.principal import Principal
from sinks.settings import SinkSettings

LIMIT = 100


def _ask(proxy_url: str, api_key: str | None, timeout_s: float) -> list[dict[str, Any]]:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    req = urllib.request.Request(f"{proxy_url}/v1/trajectories?state=pending&limit={LIMIT}", headers=headers)
    with urllib.request.urlopen(req, timeout=timeout_s) as resp:
        return list(json.loads(resp.read())["data"])


def pending_trajectories(
    proxy_url: str,
    store: SinkSettings,
    principal: Principal,
    api_key: str | None,
    timeout_s: float = 2.0,
) -> tuple[list[dict[str, Any]], str | None]:
    """The caller's pending trajectories, newest first, each with its ``tenant``; and why none could be
    read (None when the proxy answered)."""
    if principal.is_operator:
        asks: list[tuple[str, str | None]] = [
            (k.tenant, k.key.get_secret_value()) for k in store.tenant_keys
        ] or [("anonymous", None)]
    else:
        asks = [(principal.tenant or "", api_key)]
    rows: list[dict[str, Any]] = []
    try:
        for tenant, key in asks:
            rows += [{**row, "tenant": tenant} for row in _ask(proxy_url, key, timeout_s)]
    except (urllib.error.URLError, OSError, ValueError, KeyError) as err:
        return rows, f"the proxy at {proxy_url} did not answer ({err})"
    rows.sort(key=lambda r: r.get("last_step_at") or "", reverse=True)
    return rows[:LIMIT], None
