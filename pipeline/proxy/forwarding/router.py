"""Forwarding: the route of every other path below ``/v1`` (mounted after the model surfaces)."""

from __future__ import annotations

from starlette.routing import Route

from pipeline.proxy.forwarding.unrecorded import forward_unrecorded

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


def routes() -> list[Route]:
    return [Route("/v1/{rest:path}", forward_unrecorded, methods=METHODS)]
