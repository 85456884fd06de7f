"""Relay an OpenAI-format SSE stream to the agent as it arrives (one write per network read).

A backend stream that breaks before its end ends the agent's stream with an OpenAI-format error event
(``data: {"error": {...}}``), which the OpenAI SDKs raise, instead of ``[DONE]``: a stream that merely
stops reads as a complete answer to them."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from pipeline.proxy.recorded_call import RecordedCall
from pipeline.proxy.sse import DONE, encode_data


async def relay_openai_stream(rc: RecordedCall, upstream: Any) -> AsyncIterator[bytes]:
    """Raw bytes of each chunk, re-encoded only when something the recording asked for was stripped."""
    keep_chunk = rc.call.keep_chunk
    async with contextlib.aclosing(rc.batches(upstream)) as batches:
        async for batch in batches:
            out = []
            for raw, chunk in batch:
                keep = keep_chunk(chunk)
                if keep is None:
                    out.append(raw)
                elif keep:
                    out.append(encode_data(chunk))
            if out:
                yield b"".join(out)
    if rc.error is None:
        yield DONE
    else:  # a broken stream ends on an error event, not [DONE]: the OpenAI SDKs raise it as an APIError
        yield encode_data(
            {"error": {"message": rc.error, "type": "upstream_error", "param": None, "code": None}}
        )
