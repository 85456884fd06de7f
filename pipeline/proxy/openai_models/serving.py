"""OpenAI models: ask every backend (concurrently) and keep the names this proxy routes to it.

One model's card is the one the list holds for it.

A backend that does not answer contributes its configured exact (non-glob) model names instead, so the
list is useful even while a backend is down. Needs a valid key like every model endpoint. A call from
the Anthropic SDK (``anthropic-version``) gets Anthropic's shape (``anthropic_shape``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from pipeline.proxy.config import BackendConfig
from pipeline.proxy.exceptions import ApiError
from pipeline.proxy.openai_models.anthropic_shape import anthropic_card, anthropic_page, wants_anthropic
from pipeline.proxy.surfaces.context import call_context
from pipeline.proxy.surfaces.responses import json_response

log = logging.getLogger(__name__)


async def _backend_models(state: Any, backend: BackendConfig) -> list[dict[str, Any]]:
    try:
        data = await state.upstreams.get_json(backend, "/models")
        items = [m for m in data.get("data", []) if isinstance(m, dict) and isinstance(m.get("id"), str)]
    except Exception as err:  # noqa: BLE001 - any failure: fall back to the configured names
        log.info(
            "backend %s did not list its models (%s): using configured names",
            backend.name,
            type(err).__name__,
        )
        items = [
            {"id": m, "object": "model", "created": 0, "owned_by": backend.name}
            for m in backend.models
            if not any(ch in m for ch in "*?[")
        ]
    return [m for m in items if state.config.proxy.backend_for(m["id"]) is backend]


async def _served(state: Any) -> dict[str, dict[str, Any]]:
    """Model id -> its card, over every backend (the first backend to route a name to wins)."""
    lists = await asyncio.gather(*(_backend_models(state, b) for b in state.config.proxy.backends))
    seen: dict[str, dict[str, Any]] = {}
    for items in lists:
        for m in items:
            seen.setdefault(
                m["id"],
                {
                    "id": m["id"],
                    "object": "model",
                    "created": m.get("created", 0),
                    "owned_by": m.get("owned_by", "sluice"),
                },
            )
    return seen


async def list_models(request: Request) -> Response:
    state = request.app.state.sluice
    call_context(request)
    cards = list((await _served(state)).values())
    if wants_anthropic(request.headers):
        return json_response(json.dumps(anthropic_page(cards, request.query_params)).encode())
    return json_response(json.dumps({"object": "list", "data": cards}).encode())


async def retrieve_model(request: Request) -> Response:
    """``GET /v1/models/{model}``: the card ``GET /v1/models`` lists for it, else 404 ``model_not_found``."""
    state = request.app.state.sluice
    call_context(request)
    model = request.path_params["model"]
    card = (await _served(state)).get(model)
    if card is None:
        state.backend_for(model)  # 404 model_not_found when no backend routes the name
        raise ApiError(
            404,
            f"The model `{model}` is routed to a backend that does not list it",
            param="model",
            code="model_not_found",
        )
    if wants_anthropic(request.headers):
        card = anthropic_card(card)
    return json_response(json.dumps(card).encode())
