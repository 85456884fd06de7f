"""OpenAI completions: the route of the surface."""

from __future__ import annotations

from starlette.routing import Route

from pipeline.proxy.openai_completions.serving import create_completion


def routes() -> list[Route]:
    return [Route("/v1/completions", create_completion, methods=["POST"])]
