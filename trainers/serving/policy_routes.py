"""The weight API of `sluice serve-model`: read the versions held, push new weights (served at once or
loaded as a candidate), promote or roll back to a kept version, discard one; forget conversations' token
history (an erasure).

Changes are serialised (one at a time). The tensors are read and checked off the generate thread while
serving goes on; the change itself runs on the generate thread between batches, so no request in flight is
dropped or sees two versions. Every change is recorded as a ``PolicyEvent``.
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
    DISCARD_PATH,
    FORGET_PATH,
    PARENT_HEADER,
    POLICY_PATH,
    PROMOTE_PATH,
    ROLE_HEADER,
    ROLLBACK_PATH,
    VERSION_HEADER,
    WEIGHTS_PATH,
    ForgetReply,
    ForgetRequest,
    PushRequest,
    PushRole,
    SwapReply,
    VersionRequest,
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


def _record(request: Request, action: str, version: str, previous: str, **fields: Any) -> None:
    st = request.app.state
    store: PolicyStore = st.policy
    info = store.info(version)
    st.recorder.record(
        PolicyEvent(
            action=action,
            version=version,
            previous_version=previous,
            model=store.model_name,
            server=st.server_url,
            role=None if info is None else info.role,
            parent=None if info is None else info.parent,
            default_version=store.serving,
            added_bytes=0 if info is None else info.added_bytes,
            candidates=store.candidates(),
            kept_versions=store.kept(),
            **fields,
        )
    )


def _reply(store: PolicyStore, version: str, **fields: Any) -> Response:
    info = store.info(version)
    reply = SwapReply(
        serving_version=store.serving, version=version, role=None if info is None else info.role,
        parent=None if info is None else info.parent, added_bytes=0 if info is None else info.added_bytes,
        versions=store.kept(), candidates=store.candidates(), **fields,
    )  # fmt: skip
    return JSONResponse(reply.model_dump(), headers={VERSION_HEADER: store.serving})


async def _swap(request: Request, prepare: Any) -> Response:
    """Prepare (off the generate thread), apply between batches, record; one change at a time."""
    st = request.app.state
    store: PolicyStore = st.policy
    async with st.swap_lock:
        previous = store.serving
        t0 = time.perf_counter()
        prepared: Prepared = await asyncio.to_thread(prepare)
        prepared = dataclasses.replace(prepared, load_ms=(time.perf_counter() - t0) * 1000)  # read + check
        swap_ms, wait_ms = await st.engine.between_batches(lambda: store.apply(prepared))
        timings = {"swap_ms": round(swap_ms, 3), "load_ms": round(prepared.load_ms, 3)}
        _record(request, prepared.action, prepared.version, previous, tensors=prepared.replaced, **timings)
        return _reply(
            store, prepared.version, wait_ms=round(wait_ms, 3), tensors=prepared.replaced, **timings
        )


def _role(value: str) -> PushRole:
    if value not in ("serve", "candidate"):
        raise RequestError(f"{ROLE_HEADER} must be serve or candidate, not {value!r}")
    return value  # type: ignore[return-value]


async def push_weights(request: Request) -> Response:
    store: PolicyStore = request.app.state.policy
    limit = request.app.state.cfg.max_push_mb * 1024 * 1024
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype == "application/json":
        req = PushRequest.model_validate(await _json_body(request))
        store.check_push(req.version, req.role, req.parent)  # refused before the file is read

        def prepare() -> Prepared:
            return store.prepare_update(req.version, _load_file(req.path), req.role, req.parent)

        return await _swap(request, prepare)
    if ctype == "application/octet-stream":
        version = request.headers.get(VERSION_HEADER, "").strip()
        if not version:
            raise RequestError(f"a safetensors body needs the {VERSION_HEADER} header")
        role = _role(request.headers.get(ROLE_HEADER, "serve").strip())
        parent = request.headers.get(PARENT_HEADER, "").strip() or None
        if int(request.headers.get("content-length") or 0) > limit:
            raise RequestError(f"the body is larger than max_push_mb={request.app.state.cfg.max_push_mb}")
        data = await request.body()  # read before any refusal: a client still sending would see a broken pipe
        store.check_push(version, role, parent)

        def prepare_bytes() -> Prepared:
            return store.prepare_update(version, _load_bytes(data), role, parent)

        return await _swap(request, prepare_bytes)
    raise RequestError("content-type must be application/json {version, path} or application/octet-stream")


async def _select(request: Request, action: str) -> Response:
    """Promote and rollback: make a kept version the default."""
    store: PolicyStore = request.app.state.policy
    req = VersionRequest.model_validate(await _json_body(request))
    store.prepare_select(req.version, action)  # 404 before waiting for the swap lock
    return await _swap(request, lambda: store.prepare_select(req.version, action))


async def promote(request: Request) -> Response:
    return await _select(request, "promote")


async def rollback(request: Request) -> Response:
    return await _select(request, "rollback")


async def discard(request: Request) -> Response:
    st = request.app.state
    store: PolicyStore = st.policy
    req = VersionRequest.model_validate(await _json_body(request))
    async with st.swap_lock:
        _, wait_ms = await st.engine.between_batches(lambda: store.discard(req.version))
        _record(request, "discard", req.version, store.serving)
        return _reply(store, req.version, wait_ms=round(wait_ms, 3))


async def forget(request: Request) -> Response:
    """An erasure: the token history remembered for these conversations leaves memory."""
    req = ForgetRequest.model_validate(await _json_body(request))
    n = request.app.state.chat.history.forget(set(req.conversations))
    return JSONResponse(ForgetReply(forgotten=n).model_dump())


ROUTES = [
    Route(POLICY_PATH, policy_status, methods=["GET"]),
    Route(WEIGHTS_PATH, push_weights, methods=["POST"]),
    Route(PROMOTE_PATH, promote, methods=["POST"]),
    Route(ROLLBACK_PATH, rollback, methods=["POST"]),
    Route(DISCARD_PATH, discard, methods=["POST"]),
    Route(FORGET_PATH, forget, methods=["POST"]),
]
