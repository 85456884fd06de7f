"""OpenAI models: the models list as the Anthropic SDK reads it (a call with ``anthropic-version``).

Same models as the OpenAI list, in Anthropic's shape: ``{"type": "model", "id", "display_name",
"created_at", "lifecycle"}``, and a list page of them with ``has_more``, ``first_id`` and ``last_id``,
paged by ``limit`` (1-1000, default 20), ``after_id`` or ``before_id`` as Anthropic's API pages it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pipeline.proxy.exceptions import ApiError

VERSION_HEADER = "anthropic-version"


def wants_anthropic(headers: Mapping[str, str]) -> bool:
    return VERSION_HEADER in headers


def anthropic_card(card: dict[str, Any]) -> dict[str, Any]:
    created = datetime.fromtimestamp(int(card.get("created") or 0), UTC)
    return {
        "type": "model",
        "id": card["id"],
        "display_name": card["id"],
        "created_at": created.isoformat().replace("+00:00", "Z"),
        "lifecycle": "active",
    }


def anthropic_page(cards: list[dict[str, Any]], query: Mapping[str, str]) -> dict[str, Any]:
    """One page of ``cards`` (in list order) for the query's ``limit`` / ``after_id`` / ``before_id``."""
    try:
        limit = int(query.get("limit", "20"))
    except ValueError:
        raise ApiError(400, f"limit: an integer, got {query.get('limit')!r}", param="limit") from None
    if not 1 <= limit <= 1000:
        raise ApiError(400, "limit: from 1 to 1000", param="limit")
    ids = [c["id"] for c in cards]
    start, end = 0, len(cards)
    for name in ("after_id", "before_id"):
        value = query.get(name)
        if value is not None and value not in ids:
            raise ApiError(400, f"{name}: no model {value!r} in the list", param=name)
    if "after_id" in query:
        start = ids.index(query["after_id"]) + 1
    if "before_id" in query:
        end = ids.index(query["before_id"])
        start = max(start, end - limit)
    page = [anthropic_card(c) for c in cards[start:end][:limit]]
    more = (start + len(page) < end) if "before_id" not in query else start > 0
    return {
        "data": page,
        "has_more": more,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
    }
