"""Routes of the models surface."""

from __future__ import annotations

from starlette.routing import Route

from pipeline.proxy.openai_models.serving import list_models


def routes() -> list[Route]:
    return [Route("/v1/models", list_models, methods=["GET"])]
