"""The Starlette app of `sluice serve-model`: routes turn serving results into JSON or SSE, nothing more.

Shared state (engine, serving objects) lives on ``app.state``; one error shape (OpenAI's) and one set of
handlers. A model request may pick a policy version (``x-sluice-policy-version``); the response names the
version that answered, and ``x-sluice-policy-fallback`` names the one asked for when the server does not
keep it (the default answered: the agent's call never fails for a version name).
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import logging
from typing import Any

from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from sluice.errors import validation_problems
from sluice.events import CONVERSATION_HEADER
from trainers.config import ServeConfig
from trainers.exceptions import RequestError
from trainers.serving.chat import ChatServing
from trainers.serving.common import chain_first, now
from trainers.serving.completions import CompletionServing
from trainers.serving.engine import GenerateEngine
from trainers.serving.model_io import embed, tokenize
from trainers.serving.policy_api import (
    EXTENSION_FIELD,
    FALLBACK_HEADER,
    REQUEST_VERSION_HEADER,
    VERSION_HEADER,
    fell_back,
)
from trainers.serving.policy_events import PolicyEventRecorder
from trainers.serving.policy_routes import ROUTES as POLICY_ROUTES
from trainers.serving.policy_store import PolicyStore, VersionConflict, VersionNotKept
from trainers.serving.protocol import (
    ChatCompletionRequest,
    CompletionRequest,
    EmbeddingRequest,
    TokenizeRequest,
)

log = logging.getLogger(__name__)


class ModelNotFound(RequestError):
    pass


def error_response(
    status: int, message: str, kind: str = "invalid_request_error", param: str | None = None
) -> JSONResponse:
    body = {"error": {"message": message, "type": kind, "param": param, "code": None}}
    return JSONResponse(body, status_code=status)


async def _parse(request: Request, model: type[BaseModel]) -> Any:
    try:
        data = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise RequestError("the body is not valid JSON") from None
    if not isinstance(data, dict):
        raise RequestError("the body must be a JSON object")
    req = model.model_validate(data)
    pattern = request.app.state.cfg.model_name + "*"
    if not fnmatch.fnmatchcase(req.model, pattern):
        raise ModelNotFound(f"model {req.model!r} is not served here (this server serves {pattern!r})")
    return req


def _headers(req: Any) -> dict[str, str]:
    ignored = req.ignored_fields()
    return {"x-sluice-ignored-fields": ",".join(ignored)} if ignored else {}


def _asked(request: Request) -> str | None:
    """The policy version a request asks for (None: the default)."""
    return request.headers.get(REQUEST_VERSION_HEADER, "").strip()[:128] or None


def _version_headers(versions: list[str], asked: str | None) -> dict[str, str]:
    headers = {VERSION_HEADER: versions[-1]}
    if fell_back(versions, asked):
        headers[FALLBACK_HEADER] = asked or ""
    return headers


async def _serve(request: Request, model: type[BaseModel], serving: Any, **extra: Any) -> Response:
    req = await _parse(request, model)
    asked = _asked(request)
    if req.stream:
        versions: list[str] = []
        stream = serving.stream(req, versions, asked, **extra)  # validates before the first byte is sent
        first = await anext(stream)  # waits for the request's batch: its version goes in the header
        headers = {**_headers(req), **_counted(request, _version_headers(versions[:1], asked))}
        return StreamingResponse(chain_first(first, stream), media_type="text/event-stream", headers=headers)
    body = await serving.complete(req, asked, **extra)
    used = body[EXTENSION_FIELD]["policy_versions"]
    return JSONResponse(body, headers={**_headers(req), **_counted(request, _version_headers(used, asked))})


def _counted(request: Request, headers: dict[str, str]) -> dict[str, str]:
    """A request answered by the default for a version the server does not hold is counted in the status
    (and logged the first time per version), not only told in its response header."""
    if FALLBACK_HEADER in headers:
        request.app.state.engine.versions.note_fallback(headers[FALLBACK_HEADER])
    return headers


async def chat_completions(request: Request) -> Response:
    conversation = request.headers.get(CONVERSATION_HEADER, "").strip()[:256] or None  # its token history
    return await _serve(request, ChatCompletionRequest, request.app.state.chat, conversation=conversation)


async def completions(request: Request) -> Response:
    return await _serve(request, CompletionRequest, request.app.state.completions)


async def embeddings(request: Request) -> Response:
    req = await _parse(request, EmbeddingRequest)
    st = request.app.state
    return JSONResponse(await embed(st.engine, req, st.max_positions), headers=_headers(req))


async def tokenize_prompt(request: Request) -> Response:
    req = await _parse(request, TokenizeRequest)
    st = request.app.state
    return JSONResponse(tokenize(st.engine, req, st.max_positions), headers=_headers(req))


async def models(request: Request) -> Response:
    st = request.app.state
    card = {"id": st.cfg.model_name, "object": "model", "created": st.created, "owned_by": "sluice",
            "root": st.source, "max_model_len": st.max_positions}  # fmt: skip
    return JSONResponse({"object": "list", "data": [card]})


async def health(request: Request) -> Response:
    eng: GenerateEngine = request.app.state.engine
    version = request.app.state.policy.serving
    body = {"status": "ok", "batches": eng.batches, "rows": eng.rows, "running_rows": eng.running_rows,
            "policy_version": version}  # fmt: skip
    return JSONResponse(body, headers={VERSION_HEADER: version})


_STATUS: list[tuple[type[Exception], int, str]] = [
    (ModelNotFound, 404, "not_found_error"),
    (VersionNotKept, 404, "not_found_error"),
    (VersionConflict, 409, "conflict_error"),
]


async def _request_error(request: Request, exc: Exception) -> Response:
    status, kind = next(
        ((s, k) for cls, s, k in _STATUS if isinstance(exc, cls)), (400, "invalid_request_error")
    )
    return error_response(status, str(exc), kind)


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ValidationError)
    problems = validation_problems(exc)
    msgs = "; ".join(f"{loc}: {msg}" for loc, msg in problems)
    return error_response(400, msgs, param=problems[0][0])


async def _internal_error(request: Request, exc: Exception) -> Response:
    log.exception("request failed", exc_info=exc)
    return error_response(500, f"internal error: {type(exc).__name__}", "server_error")


def build_app(
    engine: GenerateEngine,
    cfg: ServeConfig,
    max_positions: int,
    source: str,
    policy: PolicyStore,
    recorder: PolicyEventRecorder,
    server_url: str,
) -> Starlette:
    app = Starlette(
        routes=[
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/v1/completions", completions, methods=["POST"]),
            Route("/v1/embeddings", embeddings, methods=["POST"]),
            Route("/tokenize", tokenize_prompt, methods=["POST"]),
            Route("/health", health, methods=["GET"]),
            *POLICY_ROUTES,
        ],
        exception_handlers={
            RequestError: _request_error,
            ValidationError: _validation_error,
            Exception: _internal_error,
        },
    )
    app.state.engine = engine
    app.state.cfg = cfg
    app.state.policy = policy
    app.state.recorder = recorder
    app.state.server_url = server_url
    app.state.swap_lock = asyncio.Lock()
    app.state.source = source
    app.state.created = now()
    app.state.max_positions = max_positions
    app.state.chat = ChatServing(engine, cfg, max_positions)
    app.state.completions = CompletionServing(engine, cfg, max_positions)
    return app
