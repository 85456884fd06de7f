"""Proxy app: ``create_app(config)`` wires the surfaces, shared state, errors and durability middleware.

    sluice proxy --config infra/sluice.yaml       # serve it (see cli.py)

Every model surface is mounted twice: at the root (``/v1/...``) and under ``/t/{trajectory_id}`` for
harnesses that can only change their base URL (OpenAI SDK: ``base_url=http://proxy/t/ID/v1``; Anthropic
SDK: ``base_url=http://proxy/t/ID``, it appends ``/v1/messages`` itself).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pipeline.proxy.ops.metrics import ProxyMetrics
from pipeline.proxy.recording.recorder import collect_steps, end_collecting
from pipeline.proxy.settings import ProxySettings
from pipeline.proxy.state import ProxyState
from pipeline.proxy.surfaces.errors import EXCEPTION_HANDLERS
from pipeline.proxy.surfaces.path_aliases import PathAliases


class HttpMiddleware:
    """A pure ASGI middleware that acts on HTTP exchanges (``exchange``) and passes anything else through."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.exchange(scope, receive, send)

    async def exchange(self, scope: Scope, receive: Receive, send: Send) -> None:
        raise NotImplementedError


class MetricsMiddleware(HttpMiddleware):
    """Counts every HTTP exchange by endpoint and status and times it to its last byte (pure ASGI)."""

    def __init__(self, app: ASGIApp, metrics: ProxyMetrics) -> None:
        super().__init__(app)
        self.metrics = metrics

    async def exchange(self, scope: Scope, receive: Receive, send: Send) -> None:
        t0 = time.perf_counter()
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            endpoint = scope.get("endpoint")
            route = getattr(endpoint, "__name__", "unmatched")
            self.metrics.observe_request(route, status, time.perf_counter() - t0)


class DurableResponseMiddleware(HttpMiddleware):
    """Sends no part of a response before the events it depends on are durable (pure ASGI).

    Steps finished while serving the request are published just before the next message goes out, and
    that message waits for the publisher's group commit (``EventPublisher.durable``): the agent never
    receives an answer (or a stream's end) whose step a crash of the proxy could still lose. Rewards and
    ends published by a handler wait the same way."""

    def __init__(self, app: ASGIApp, state: ProxyState) -> None:
        super().__init__(app)
        self.state = state

    async def exchange(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = self.state
        steps: list = []

        async def durable_send(message: Message) -> None:
            if steps:
                state.recorder.publish_collected(steps)
            waiting = state.publisher.durable()
            if waiting is not None:
                await waiting
            await send(message)

        token = collect_steps(steps)
        try:
            await self.app(scope, receive, durable_send)
        finally:
            end_collecting(token)
            if steps:  # the client went away before the last message: record the step anyway
                state.recorder.publish_collected(steps)


def model_routes() -> list[BaseRoute]:
    from pipeline.proxy.anthropic_messages.router import routes as anthropic_routes
    from pipeline.proxy.openai_chat.router import routes as chat_routes
    from pipeline.proxy.openai_completions.router import routes as completion_routes
    from pipeline.proxy.openai_models.router import routes as model_list_routes
    from pipeline.proxy.openai_responses.router import routes as responses_routes

    return [
        *chat_routes(),
        *completion_routes(),
        *responses_routes(),
        *anthropic_routes(),
        *model_list_routes(),
    ]


def create_app(config: ProxySettings) -> Starlette:
    """The proxy app for ``config``; its lifespan starts the upstream pools and the publisher."""
    from pipeline.proxy.forwarding.router import routes as forwarding_routes
    from pipeline.proxy.ops.router import routes as ops_routes
    from pipeline.proxy.trajectories.router import routes as trajectory_routes

    state = ProxyState(config)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await state.start()
        try:
            yield
        finally:
            await state.stop()

    routes: list[BaseRoute] = [
        *model_routes(),
        *trajectory_routes(),
        *ops_routes(),
        # last, here and under the prefix: every other path below /v1
        Mount("/t/{trajectory_id}", routes=[*model_routes(), *forwarding_routes()]),
        *forwarding_routes(),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers=EXCEPTION_HANDLERS,  # type: ignore[arg-type]
        middleware=[
            Middleware(PathAliases, max_body_bytes=config.proxy.max_body_bytes),
            Middleware(MetricsMiddleware, metrics=state.metrics),
            Middleware(DurableResponseMiddleware, state=state),
        ],
    )
    app.state.sluice = state
    return app
