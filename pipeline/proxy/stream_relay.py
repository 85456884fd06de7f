"""Relay an OpenAI-format SSE stream to the agent as it arrives (one write per network read)."""

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
        yield DONE  # a broken stream ends without it, so the agent's SDK sees it was cut short
