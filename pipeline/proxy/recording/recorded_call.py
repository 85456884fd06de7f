"""A backend call together with the step it records: every ending of the call finishes the step.

The surface opens the step (``StepRecorder.begin``) and builds the call; ``RecordedCall`` runs the call
and, once it returned its ``CallOutcome`` (an answer, an error, a broken stream, a client that went
away), hands it to ``StepRecorder.finish``. The call never publishes; calls go down, the outcome comes
back up.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from pipeline.proxy.forwarding.backend_call import BackendCall, Batch
from pipeline.proxy.recording.recorder import StepRecorder
from pipeline.proxy.recording.step import OpenStep
from sluice.events import POLICY_VERSION_HEADER


class RecordedCall:
    def __init__(self, recorder: StepRecorder, step: OpenStep, call: BackendCall) -> None:
        self.recorder, self.step, self.call = recorder, step, call

    @property
    def stream(self) -> bool:
        return self.call.stream

    def served_headers(self) -> dict[str, str]:
        """The model policy version that answered, as the backend named it (read once the answer or the
        stream's headers are in): the agent can attribute its outcome the way the step does."""
        names = self.call.policy_versions or (
            [self.call.policy_header[:128]] if self.call.policy_header else []
        )
        return {POLICY_VERSION_HEADER: ",".join(names)} if names else {}

    @property
    def error(self) -> str | None:
        """The error the call ended with (None while it runs or when it succeeded)."""
        out = self.call.outcome
        return out.error if out is not None else None

    def _finish(self) -> None:
        if self.call.outcome is not None:
            self.recorder.finish(self.step, self.call.outcome)

    async def answer(self) -> tuple[dict[str, Any], bytes | None]:
        """The backend's answer for the agent, and its raw bytes when they can be passed on unchanged."""
        try:
            return await self.call.call()
        finally:
            self._finish()

    async def open_stream(self) -> aiohttp.ClientResponse:
        try:
            return await self.call.open_stream()
        finally:
            self._finish()

    async def batches(self, upstream: aiohttp.ClientResponse) -> AsyncIterator[Batch]:
        """Parsed chunks as they arrive; the step finishes when the stream ends or is closed."""
        try:
            async with contextlib.aclosing(self.call.chunk_batches(upstream)) as batches:
                async for batch in batches:
                    yield batch
        finally:
            self._finish()
