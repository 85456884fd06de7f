"""Forwarding: ``BackendCall`` sends one recorded model call to its backend and ends its step once.

A surface opens the step (``StepRecorder.begin``) and builds the call with it; the call posts the
upstream request, answers or streams, and every path ends in ``_end``, exactly once: success, upstream
error, unreachable backend, broken stream or a client that went away. ``_end`` writes what the backend
answered into the step (``Step.end``) and hands it to ``StepRecorder.finish``, which queues it for the
durability middleware to publish: the call never publishes.

Subclasses (``ChatCall``, ``CompletionCall``) say which upstream path, what to add to the request for
recording (``body_changes``), what to strip from the answer (``strip_response``/``keep_chunk``), which
token ids to ask for (``token_strip``), how to assemble a stream and how to read choices from an answer
(``read_choices``). The upstream body is the agent's bytes as received when nothing needs adding, and is
serialised once otherwise.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any, Protocol

from pipeline.proxy.exceptions import ApiError
from pipeline.proxy.forwarding.token_strip import TokenStrip
from pipeline.proxy.forwarding.upstream import Upstreams, read_error
from pipeline.proxy.forwarding.upstream_response import UpstreamError, UpstreamResponse
from pipeline.proxy.ops.metrics import ProxyMetrics
from pipeline.proxy.recording.recorder import StepRecorder
from pipeline.proxy.recording.step import RawChoice, Step, UpstreamRequest
from pipeline.proxy.surfaces.sse import SseSplitter, encode_data, event_data
from sluice.events import CONVERSATION_HEADER, POLICY_EXTENSION_FIELD, POLICY_VERSION_HEADER

Batch = list[tuple[bytes, dict[str, Any]]]


class StreamAssembler(Protocol):
    first_token_at: float | None

    def feed(self, chunk: dict[str, Any], now: float = 0.0) -> None: ...

    @property
    def has_data(self) -> bool: ...

    def finished_all(self) -> bool: ...

    def result(self) -> dict[str, Any]: ...


class BackendCall:
    path = "/chat/completions"

    def __init__(
        self,
        upstreams: Upstreams,
        metrics: ProxyMetrics,
        recorder: StepRecorder,
        step: Step,
        request: UpstreamRequest,
    ) -> None:
        self.upstreams, self.metrics, self.recorder = upstreams, metrics, recorder
        self.step = step  # what gets recorded: the call writes what the backend answered into it
        self.backend = step.backend
        self.request = request  # what the backend is asked (the agent's typed request, or its translation)
        self.tokens = self.token_strip()
        self.asked_usage = bool((request.stream_options or {}).get("include_usage"))
        self.policy_request: str | None = None  # the model policy version this call's arm asks for
        self.conversation: str | None = (
            None  # the trajectory, named to a token-id backend (its token history)
        )

    # ------------------------------------------------------------------ hooks

    def token_strip(self) -> TokenStrip:
        """Which token ids and logprobs the recording asks for and strips again (``token_strip``)."""
        raise NotImplementedError

    def body_changes(self) -> dict[str, Any]:
        changes: dict[str, Any] = {}
        if self.step.stream and not self.asked_usage:
            changes["stream_options"] = {**(self.request.stream_options or {}), "include_usage": True}
        return {**changes, **self.tokens.body_changes()}

    def strip_response(self, resp: dict[str, Any]) -> bool:
        """Remove from a non-streamed answer what only the recording asked for; True if changed."""
        return self.tokens.strip(resp)

    def strip_chunk(self, chunk: dict[str, Any]) -> bool:
        changed = self.tokens.strip(chunk)
        if changed and not self.asked_usage:
            chunk.pop("usage", None)
        return changed

    def prepare_chunk(self, chunk: dict[str, Any]) -> bool:
        """Fix up a streamed chunk before it is assembled, recorded and relayed; True if changed."""
        return False

    def new_assembler(self) -> StreamAssembler:
        raise NotImplementedError

    def read_choices(self, resp: dict[str, Any]) -> tuple[list[RawChoice], list[int] | None]:
        """The answer's choices (sorted by index) and prompt token ids, read before anything is stripped."""
        raise NotImplementedError

    # ------------------------------------------------------------------ request

    def upstream_body(self) -> bytes:
        """The agent's bytes as received when the recording adds nothing, else serialised once."""
        return self.request.upstream_body(self.body_changes())

    async def _post(self) -> UpstreamResponse:
        try:
            headers = {POLICY_VERSION_HEADER: self.policy_request} if self.policy_request else {}
            if self.conversation:
                headers[CONVERSATION_HEADER] = self.conversation
            resp = await self.upstreams.post(self.backend, self.path, self.upstream_body(), headers or None)
            self.step.policy_header = resp.headers.get(POLICY_VERSION_HEADER) or None
            return resp
        except ApiError as err:
            self.metrics.upstream_errors.labels(self.backend.name, "unreachable").inc()
            self._end(None, err.status, err.message)
            raise

    async def _fail(self, resp: UpstreamResponse) -> ApiError:
        try:
            data = await resp.read()
        except (UpstreamError, TimeoutError):
            data = b""
        finally:
            resp.release()
        err = read_error(resp.status, data, self.backend.name)
        self.metrics.upstream_errors.labels(self.backend.name, str(resp.status)).inc()
        self._end(None, resp.status, err.message)
        return err

    # ------------------------------------------------------------------ non-streaming

    async def answer(self) -> tuple[dict[str, Any], bytes | None]:
        """The backend's answer for the agent, and its raw bytes when they can be passed on unchanged."""
        resp = await self._post()
        if resp.status >= 400:
            raise await self._fail(resp)
        try:
            data = await resp.read()
        except (UpstreamError, TimeoutError) as err:
            self._end(None, 502, f"backend response broke: {type(err).__name__}")
            raise ApiError(
                502, f"backend {self.backend.name!r} broke off its answer", type="upstream_error"
            ) from None
        finally:
            resp.release()
        try:
            parsed = json.loads(data)
            if not isinstance(parsed, dict):
                raise ValueError("not an object")
        except ValueError:
            self._end(None, 502, "backend answered invalid JSON")
            raise ApiError(
                502, f"backend {self.backend.name!r} answered invalid JSON", type="upstream_error"
            ) from None
        self._note_extension(parsed)
        changed = self.prepare_response(parsed)
        self._end(parsed, resp.status, None)
        changed = self.strip_response(parsed) or changed
        return parsed, None if changed else data

    def prepare_response(self, resp: dict[str, Any]) -> bool:
        """Fix up an answer before it is recorded and sent (e.g. missing tool-call ids); True if changed."""
        return False

    # ------------------------------------------------------------------ streaming

    async def open_stream(self) -> UpstreamResponse:
        resp = await self._post()
        if resp.status >= 400:
            raise await self._fail(resp)
        ctype = resp.headers.get("content-type", "")
        if "text/event-stream" not in ctype:
            resp.release()
            msg = f"backend {self.backend.name!r} did not stream (content-type {ctype!r})"
            self._end(None, 502, msg)
            raise ApiError(502, msg, type="upstream_error")
        return resp

    def keep_chunk(self, chunk: dict[str, Any]) -> bool | None:
        """For the agent: False = drop the chunk, None = pass its raw bytes, True = changed (re-encode)."""
        if not self.asked_usage and not chunk.get("choices") and chunk.get("usage") is not None:
            return False  # the usage-only final chunk only the recording asked for
        return True if self.strip_chunk(chunk) else None

    async def batches(self, resp: UpstreamResponse) -> AsyncIterator[Batch]:
        """Parsed chunks as they arrive, one batch per network read; the step ends when the stream ends or
        is closed."""
        asm = self.new_assembler()
        splitter = SseSplitter()
        error: str | None = None
        done = False
        try:
            try:
                async for data in resp.iter_any():
                    batch: Batch = []
                    for ev in splitter.feed(data):
                        payload = event_data(ev)
                        if payload is None:
                            continue
                        if payload.strip() == b"[DONE]":
                            done = True
                            continue
                        try:
                            chunk = json.loads(payload)
                        except ValueError:
                            error = "backend sent a malformed stream chunk"
                            continue
                        if not isinstance(chunk, dict):
                            continue
                        if "error" in chunk and "choices" not in chunk:
                            err = chunk["error"]
                            error = str(err.get("message") if isinstance(err, dict) else err)
                            batch.append((ev + b"\n\n", chunk))
                            continue
                        changed = self.prepare_chunk(chunk)
                        asm.feed(chunk, time.perf_counter())
                        self._note_extension(chunk)
                        batch.append((encode_data(chunk) if changed else ev + b"\n\n", chunk))
                    if batch:
                        yield batch
            except (UpstreamError, TimeoutError) as err:
                error = f"backend stream broke: {type(err).__name__}"
            if not done and error is None and not asm.finished_all():
                error = "backend stream ended before it finished"
            self._finish_stream(asm, error)
        finally:
            resp.release()
            if not self.step.ended:
                self._finish_stream(asm, "client went away before the stream ended")

    def _finish_stream(self, asm: StreamAssembler, error: str | None) -> None:
        if asm.first_token_at is not None:
            t0 = self.step.ctx.t0
            self.step.ttft_ms = (asm.first_token_at - t0) * 1000
            self.metrics.ttft.observe(asm.first_token_at - t0)
        self._end(asm.result() if asm.has_data else None, 200, error)

    # ------------------------------------------------------------------ the ending

    @property
    def error(self) -> str | None:
        """The error the call ended with (None while it runs or when it succeeded)."""
        return self.step.error

    def _note_extension(self, body: dict[str, Any]) -> None:
        """The policy versions a Sluice model server names in its ``sluice`` extension field."""
        ext = body.get(POLICY_EXTENSION_FIELD)
        if not isinstance(ext, dict):
            return
        seen = self.step.policy_versions
        versions = ext.get("policy_versions")
        for v in versions if isinstance(versions, list) else [ext.get("policy_version")]:
            if isinstance(v, str) and v and v not in seen:
                seen.append(v[:128])

    def _end(self, resp: dict[str, Any] | None, status: int | None, error: str | None) -> None:
        """End the step once, with the choices read from the (assembled) answer, and hand it to the
        recorder."""
        step = self.step
        if step.ended:
            return
        choices, ids = self.read_choices(resp) if resp is not None else ([], None)
        if step.end(status, error, (time.perf_counter() - step.ctx.t0) * 1000, resp, choices, ids):
            self.recorder.finish(step)
