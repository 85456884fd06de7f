"""OpenAI responses: the route of the surface."""

from __future__ import annotations

from starlette.routing import Route

from pipeline.proxy.openai_responses.serving import create_response


def routes() -> list[Route]:
    return [Route("/v1/responses", create_response, methods=["POST"])]
