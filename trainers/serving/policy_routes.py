"""The weight API of `sluice serve-model`: read the serving version, push new weights, roll back.

Pushes and rollbacks are serialised (one swap at a time). The tensors are read and checked off the generate
thread while serving goes on; the swap itself runs on the generate thread between batches, so no request in
flight is dropped or sees two versions. Every change is recorded as a ``PolicyEvent``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from sluice.events import PolicyEvent
from trainers.exceptions import RequestError
from trainers.serving.policy_api import (
    POLICY_PATH,
    ROLLBACK_PATH,
    VERSION_HEADER,
    WEIGHTS_PATH,
    PushRequest,
    RollbackRequest,
    SwapReply,
)
from trainers.serving.policy_store import BadTensors, PolicyStore, Prepared


def _load_file(path: str) -> dict[str, Any]:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        return load_file(path)
    except (OSError, SafetensorError) as err:
        raise BadTensors(f"cannot read safetensors file {path!r}: {err}") from None


def _load_bytes(data: bytes) -> dict[str, Any]:
    from safetensors import SafetensorError
    from safetensors.torch import load

    try:
        return load(data)
    except (SafetensorError, ValueError) as err:
        raise BadTensors(f"the body is not a safetensors file: {err}") from None


async def _json_body(request: Request) -> dict[str, Any]:
    try:
        data = json.loads(await request.body())
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise RequestError("the body is not valid JSON") from None
    if not isinstance(data, dict):
        raise RequestError("the body must be a JSON object")
    return data


async def policy_status(request: Request) -> Response:
    store: PolicyStore = request.app.state.policy
    return JSONResponse(store.status().model_dump())


async def _swap(request: Request, prepare: Any) -> Response:
    """Prepare (off the generate thread), swap between batches, record; one swap at a time."""
    st = request.app.state
    store: PolicyStore = st.policy
    async with st.swap_lock:
        previous = store.serving
        t0 = time.perf_counter()
        prepared: Prepared = await asyncio.to_thread(prepare)
        prepared = dataclasses.replace(prepared, load_ms=(time.perf_counter() - t0) * 1000)  # read + check
        swap_ms, wait_ms = await st.engine.between_batches(lambda: store.apply(prepared))
    kept = store.kept()
    st.recorder.record(
        PolicyEvent(
            action=prepared.action,
            version=prepared.version,
            previous_version=previous,
            model=store.model_name,
            server=st.server_url,
            tensors=prepared.replaced,
            swap_ms=round(swap_ms, 3),
            load_ms=round(prepared.load_ms, 3),
            kept_versions=kept,
        )  # fmt: skip
    )
    reply = SwapReply(
        serving_version=prepared.version, swap_ms=round(swap_ms, 3), load_ms=round(prepared.load_ms, 3),
        wait_ms=round(wait_ms, 3), tensors=prepared.replaced, versions=kept,
    )  # fmt: skip
    return JSONResponse(reply.model_dump(), headers={VERSION_HEADER: prepared.version})


async def push_weights(request: Request) -> Response:
    store: PolicyStore = request.app.state.policy
    limit = request.app.state.cfg.max_push_mb * 1024 * 1024
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype == "application/json":
        req = PushRequest.model_validate(await _json_body(request))
        store.check_new_name(req.version)  # a reused name is refused before the file is read

        def prepare() -> Prepared:
            return store.prepare_update(req.version, _load_file(req.path))

        return await _swap(request, prepare)
    if ctype == "application/octet-stream":
        version = request.headers.get(VERSION_HEADER, "").strip()
        if not version:
            raise RequestError(f"a safetensors body needs the {VERSION_HEADER} header")
        if int(request.headers.get("content-length") or 0) > limit:
            raise RequestError(f"the body is larger than max_push_mb={request.app.state.cfg.max_push_mb}")
        data = await request.body()  # read before any refusal: a client still sending would see a broken pipe
        store.check_new_name(version)

        def prepare_bytes() -> Prepared:
            return store.prepare_update(version, _load_bytes(data))

        return await _swap(request, prepare_bytes)
    raise RequestError("content-type must be application/json {version, path} or application/octet-stream")


async def rollback(request: Request) -> Response:
    store: PolicyStore = request.app.state.policy
    req = RollbackRequest.model_validate(await _json_body(request))
    store.prepare_rollback(req.version)  # 404 before waiting for the swap lock
    return await _swap(request, lambda: store.prepare_rollback(req.version))


ROUTES = [
    Route(POLICY_PATH, policy_status, methods=["GET"]),
    Route(WEIGHTS_PATH, push_weights, methods=["POST"]),
    Route(ROLLBACK_PATH, rollback, methods=["POST"]),
]
