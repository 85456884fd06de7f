"""Pieces both endpoints share: token limits, job arguments, stop-string trimming, usage, SSE framing."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from trainers.config import ServeConfig
from trainers.exceptions import RequestError

T = TypeVar("T")


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:24]}"


def now() -> int:
    return int(time.time())


def sse(payload: dict[str, Any] | str) -> str:
    body = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
    return f"data: {body}\n\n"


def job_args(
    cfg: ServeConfig,
    max_positions: int,
    prompt_ids: list[int],
    *,
    n: int,
    max_tokens: int | None,
    temperature: float,
    top_p: float,
    seed: int | None,
    stop: list[str],
    eos_id: int | None,
    constraint: Callable[[], Any] | None = None,
    version: str | None = None,
) -> dict[str, Any]:
    """Validated arguments of one engine job; a prompt that leaves no room to generate is a 400.
    ``constraint`` makes each row's logits constraint (a forced call's argument schema); ``eos_id`` None
    decodes past the end-of-sequence token (``ignore_eos``); ``version`` is the policy version asked for
    (None: the default)."""
    if not prompt_ids:
        raise RequestError("the prompt is empty")
    wanted = cfg.default_max_tokens if max_tokens is None else max_tokens
    if wanted > cfg.max_tokens_limit:
        raise RequestError(f"max_tokens={wanted} is above this server's limit of {cfg.max_tokens_limit}")
    room = max_positions - len(prompt_ids)
    if room <= 0:
        raise RequestError(
            f"the prompt has {len(prompt_ids)} tokens; this model's context is {max_positions} tokens"
        )
    return {
        "prompt_ids": prompt_ids,
        "n": n,
        "max_tokens": min(wanted, room),
        "temperature": temperature,
        "top_p": top_p,
        "seed": seed,
        "stop_ids": frozenset() if eos_id is None else frozenset({eos_id}),
        "stop": tuple(stop),
        "constraint": constraint,
        "version": version,
    }


@dataclass
class StopTrimmer:
    """Text of one choice, cut before the first stop string. ``feed`` returns what is safe to send now:
    it holds back a tail that could still become a stop string."""

    stops: tuple[str, ...]
    text: str = ""
    sent: int = 0
    stopped: bool = False

    def feed(self, piece: str) -> str:
        if self.stopped:
            return ""
        self.text += piece
        for s in self.stops:
            at = self.text.find(s)
            if at >= 0:
                self.text = self.text[:at]
                self.stopped = True
        hold = 0 if self.stopped else max((len(s) - 1 for s in self.stops), default=0)
        safe_end = max(self.sent, len(self.text) - hold)
        out, self.sent = self.text[self.sent : safe_end], safe_end
        return out

    def flush(self) -> str:
        out, self.sent = self.text[self.sent :], len(self.text)
        return out


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


async def chain_first(first: T, rest: AsyncIterator[T]) -> AsyncIterator[T]:
    """``first``, then everything ``rest`` yields (an iterator whose head was already taken)."""
    yield first
    async for item in rest:
        yield item
