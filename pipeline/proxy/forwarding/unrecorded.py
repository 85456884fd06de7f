"""Forwarding: pass the rest of an OpenAI-compatible API to a backend, unrecorded.

An agent that points its client's ``base_url`` at Sluice sends every call of that client here, not only
the model calls Sluice records: embeddings for its retrieval, moderations, audio, files, a backend's own
extensions. Those are passed to a backend as they are, with the backend's credential instead of the
agent's key, and the backend's answer comes back as it is, streamed. Nothing of them is published,
spooled or logged: they are not steps (``x-sluice-forwarded: unrecorded`` on the answer says so).

Which backend: the one serving the ``model`` of a JSON body (404 ``model_not_found`` when none does),
else the first configured backend. The caller needs a valid key, as on every model surface. Not forwarded:
the paths of the surfaces the proxy serves itself (another method there is a 405), anything below
``/v1/responses`` or ``/v1/messages``, which the proxy translates (the backend speaks neither), and
anything below ``/v1/trajectories`` (rewards, feedback and ends are the proxy's own API); with
``proxy.forward_unrecorded: false`` nothing is, and every other path is a 404.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from pipeline.proxy.config import BackendConfig
from pipeline.proxy.exceptions import ApiError
from pipeline.proxy.forwarding.upstream_response import UpstreamResponse
from pipeline.proxy.surfaces.context import call_context
from pipeline.proxy.surfaces.request import read_body
from sluice.json_limits import MAX_JSON_DEPTH, JsonTooDeep, loads_bounded

if TYPE_CHECKING:
    from pipeline.proxy.state import ProxyState

# Paths the proxy answers itself (below /v1): another method there is not forwarded but refused.
OWN_PATHS = frozenset(
    {"chat/completions", "completions", "responses", "messages", "messages/count_tokens", "models"}
)
# Below these the backend has nothing: surfaces the proxy translates to the backend's chat API, and the
# proxy's own reward, feedback and end API (a trajectory's data never goes to a backend).
NOT_FORWARDED = ("responses/", "messages/", "trajectories/", "trajectories")
# Request headers passed to the backend; the agent's credentials and cookies never are.
FORWARDED_REQUEST_HEADERS = ("content-type", "accept", "openai-beta", "idempotency-key", "user-agent")
# Response headers not passed back: hop-by-hop, re-framed by this server, or the backend's own session.
DROPPED_RESPONSE_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "transfer-encoding",
        "content-encoding",  # the body arrives decompressed
        "content-length",  # the body is re-framed
        "set-cookie",
        "www-authenticate",
        "server",
        "date",
    }
)
FORWARDED_HEADER = "x-sluice-forwarded"


def refused(method: str, rest: str, forward: bool) -> ApiError | None:
    """Why ``method /v1/rest`` is not forwarded (the error to answer), or None when it is."""
    if rest in OWN_PATHS:
        return ApiError(405, f"method {method} is not allowed on /v1/{rest}")
    if not forward or rest.startswith(NOT_FORWARDED) or not rest:
        return ApiError(404, f"no such endpoint: {method} /v1/{rest}")
    return None


def body_model(body: bytes, content_type: str) -> str | None:
    """The ``model`` named by a JSON object body, if any (any other body names none)."""
    if not body or "json" not in content_type:
        return None
    try:
        data = loads_bounded(body.decode("utf-8"), MAX_JSON_DEPTH)
    except (UnicodeDecodeError, ValueError, JsonTooDeep):
        return None  # the backend answers what is wrong with it, in its own words
    model = data.get("model") if isinstance(data, dict) else None
    return model if isinstance(model, str) and model else None


def pick_backend(state: ProxyState, model: str | None) -> BackendConfig:
    """The backend serving ``model``; without a model, the first configured backend."""
    if model is not None:
        return state.backend_for(model)
    backends = state.config.proxy.backends
    if not backends:
        raise ApiError(503, "no backend is configured", type="upstream_error")
    return backends[0]


async def _relay(resp: UpstreamResponse) -> AsyncIterator[bytes]:
    try:
        async for chunk in resp.iter_any():
            yield chunk
    finally:
        resp.release()


async def forward_unrecorded(request: Request) -> Response:
    """``/v1/{rest}``: the backend's answer to the same call, streamed back, nothing recorded."""
    state = request.app.state.sluice
    cfg = state.config.proxy
    call_context(request)  # 401 before anything is read; a /t/{id} prefix must be the caller's own
    rest = request.path_params["rest"].strip("/")
    err = refused(request.method, rest, cfg.forward_unrecorded)
    if err is not None:
        raise err
    body = await read_body(request, cfg.max_body_bytes)
    content_type = request.headers.get("content-type", "")
    backend = pick_backend(state, body_model(body, content_type))
    headers = {h: request.headers[h] for h in FORWARDED_REQUEST_HEADERS if h in request.headers}
    query = request.scope.get("query_string", b"").decode("latin-1")
    resp = await state.upstreams.request(
        backend, request.method, f"/{rest}", body or None, headers=headers, query=query
    )
    out = {k: v for k, v in resp.headers.items() if k.lower() not in DROPPED_RESPONSE_HEADERS}
    out[FORWARDED_HEADER] = "unrecorded"
    # released when the body is relayed, or after the answer when the client left before its end
    return StreamingResponse(
        _relay(resp), status_code=resp.status, headers=out, background=BackgroundTask(resp.release)
    )
