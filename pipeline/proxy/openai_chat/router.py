"""OpenAI chat: the route of the surface (also under the ``/t/{trajectory_id}`` prefix)."""

from __future__ import annotations

from starlette.routing import Route

from pipeline.proxy.openai_chat.serving import create_chat_completion


def routes() -> list[Route]:
    return [Route("/v1/chat/completions", create_chat_completion, methods=["POST"])]
