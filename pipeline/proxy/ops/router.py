"""Ops: ``GET /healthz`` (liveness and publisher state) and ``GET /metrics`` (Prometheus text)."""

from __future__ import annotations

import json
from dataclasses import asdict

from prometheus_client import CONTENT_TYPE_LATEST
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


async def healthz(request: Request) -> Response:
    state = request.app.state.sluice
    stats = state.publisher.stats()
    body = {
        "status": "ok" if state.started else "starting",
        "publisher": asdict(stats),
        "backends": [b.name for b in state.config.proxy.backends],
        "trajectories_tracked": state.recorder.linked(),
    }
    return Response(
        json.dumps(body), status_code=200 if state.started else 503, media_type="application/json"
    )


async def metrics(request: Request) -> Response:
    return Response(request.app.state.sluice.metrics.render(), media_type=CONTENT_TYPE_LATEST)


def routes() -> list[Route]:
    return [Route("/healthz", healthz, methods=["GET"]), Route("/metrics", metrics, methods=["GET"])]
