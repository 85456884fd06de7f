"""OpenAI models: the routes of the surface."""

from __future__ import annotations

from starlette.routing import Route

from pipeline.proxy.openai_models.serving import list_models, retrieve_model


def routes() -> list[Route]:
    return [
        Route("/v1/models", list_models, methods=["GET"]),
        Route("/v1/models/{model:path}", retrieve_model, methods=["GET"]),
    ]
