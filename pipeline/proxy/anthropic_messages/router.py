"""Anthropic messages: the routes of the surface."""

from __future__ import annotations

from starlette.routing import Route

from pipeline.proxy.anthropic_messages.count_tokens import count_tokens
from pipeline.proxy.anthropic_messages.serving import create_message


def routes() -> list[Route]:
    return [
        Route("/v1/messages", create_message, methods=["POST"]),
        Route("/v1/messages/count_tokens", count_tokens, methods=["POST"]),
    ]
