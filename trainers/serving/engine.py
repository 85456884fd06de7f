"""The generate thread behind `sluice serve-model`: requests that arrive together are decoded together.

Each request becomes one row per choice (n > 1 gives n rows); the thread drains its queue up to
``max_batch`` rows, runs the batched decode loop, and pushes every token to the request's asyncio queue as
it is sampled, so streaming is real (not chunks sent after generation). A request with a seed gets one
torch.Generator per choice (seed + index): its samples do not depend on what it was batched with.

A job may carry a logits constraint factory (a forced tool call's argument schema): each of its rows gets
its own constraint object, which masks the row's logits before every sample; the text its tokens add is
then the constraint's, the decoded text of the ids sampled.

Several policy versions are served at once. A job names the version it asks for (None: the default); the
thread decodes batches of ONE version: before each batch it resolves every queued job to a kept version (a
name no longer kept falls back to the default), picks the version whose turn it is (round robin over the
versions with queued jobs: the one served least recently, so a quiet candidate is not starved by a busy
default, nor the default by a busy candidate), takes that version's jobs oldest first up to ``max_batch``
rows, points the parameters at that version's tensors (``Versions.activate``: a ``.data`` swap,
microseconds) and decodes. Changes to the versions held (pushes, promotions, discards) run on the same
thread, between batches (``between_batches``), ahead of the next batch: a batch is decoded by one policy
version from start to end, and every token event names that version.

    sluice serve-model --config infra/sluice.yaml
"""

from __future__ import annotations

import asyncio
import collections
import logging
import queue
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import torch
from transformers import PreTrainedTokenizerBase

from trainers.generation import GenRequest, GenResult, LogitsConstraint, generate
from trainers.scoring import score_sequences

log = logging.getLogger(__name__)

T = TypeVar("T")
_WAKE = object()  # queued to wake the thread for a control call when no request is waiting


class Versions(Protocol):
    """The policy versions an engine decodes with (``PolicyStore``)."""

    def resolve(self, asked: str | None) -> str:
        """The kept version a job asking for ``asked`` gets (None or a name not kept: the default)."""
        ...

    def activate(self, version: str) -> float:
        """Point the model's parameters at ``version``'s tensors (generate thread only)."""
        ...


class OneVersion:
    """A model served as one unnamed version (nothing to swap)."""

    def __init__(self, name: str = "") -> None:
        self.name = name

    def resolve(self, asked: str | None) -> str:
        return self.name

    def activate(self, version: str) -> float:
        return 0.0


@dataclass(frozen=True)
class TokenEvent:
    """One sampled token of one choice; ``result`` is set on the choice's last event."""

    index: int
    token_id: int
    logprob: float
    text: str  # decoded text this token adds (special tokens add nothing)
    result: GenResult | None = None
    version: str = ""  # the policy version decoding this token's batch


@dataclass
class Job:
    prompt_ids: list[int]
    n: int
    max_tokens: int
    temperature: float
    top_p: float
    seed: int | None
    stop_ids: frozenset[int]
    stop: tuple[str, ...]
    loop: asyncio.AbstractEventLoop
    constraint: Callable[[], LogitsConstraint] | None = None  # one per row, made on the generate thread
    version: str | None = None  # the policy version asked for (None: the default)
    events: asyncio.Queue[TokenEvent | BaseException | None] = field(default_factory=asyncio.Queue)
    cancelled: bool = False


class GenerateEngine:
    """Owns the model; one daemon thread decodes batches of queued jobs."""

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: PreTrainedTokenizerBase,
        max_batch: int = 32,
        versions: Versions | None = None,
    ) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.max_batch = max_batch
        self.versions: Versions = versions if versions is not None else OneVersion()
        self._queue: queue.Queue[Any] = queue.Queue()
        self._pending: list[Job] = []  # jobs taken off the queue, oldest first (generate thread only)
        self._turns: dict[str, int] = {}  # version -> the turn it was last decoded in
        self._turn = 0
        self._stopping = False
        self._control: collections.deque[tuple[Callable[[], Any], asyncio.Future, float]] = (
            collections.deque()
        )
        self._thread = threading.Thread(target=self._run, name="sluice-generate", daemon=True)
        self._special = set(tokenizer.all_special_ids)
        self.batches = 0
        self.rows = 0
        self.running_rows = 0  # rows of the batch being decoded now (0: idle)
        self.running_version: str | None = None  # the version of the batch being decoded now

    def start(self) -> GenerateEngine:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=10)

    async def between_batches(self, fn: Callable[[], T]) -> tuple[T, float]:
        """Run ``fn`` on the generate thread once the running batch (if any) has finished, before any queued
        request; returns its result and the milliseconds waited for the batch to end."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future = loop.create_future()
        self._control.append((fn, fut, time.perf_counter()))
        self._queue.put(_WAKE)
        return await fut

    def _run_control(self) -> None:
        while self._control:
            fn, fut, queued = self._control.popleft()
            waited = (time.perf_counter() - queued) * 1000
            loop = fut.get_loop()
            try:
                result = fn()
            except Exception as err:  # the caller gets the error; the thread goes on
                loop.call_soon_threadsafe(_settle, fut, None, err)
            else:
                loop.call_soon_threadsafe(_settle, fut, (result, waited), None)

    async def score(self, prompts: list[list[int]], asked: str | None) -> tuple[str, list[list[float]]]:
        """Under policy version ``asked`` (None or not kept: the default), each prompt token's log-probability
        given the tokens before it (the first token has none: ``len(ids) - 1`` values per prompt). Runs on
        the generate thread between batches: the prompts' common prefix once, then the rest ``max_batch``
        prompts a forward (``trainers.scoring``); returns the version used."""

        def run() -> tuple[str, list[list[float]]]:
            version = self.versions.resolve(asked)
            self.versions.activate(version)
            return version, score_sequences(self.model, prompts, batch=self.max_batch)

        result, _waited = await self.between_batches(run)
        return result

    def token_text(self, token_id: int) -> str:
        return "" if token_id in self._special else self.tokenizer.decode([token_id])

    def use_default(self) -> None:
        """Point the parameters at the default version (generate thread: inside ``between_batches``)."""
        self.versions.activate(self.versions.resolve(None))

    async def submit(self, job_args: dict) -> AsyncIterator[TokenEvent]:
        """Queue a job (``job_args["version"]``: the policy version asked for, None or absent: the default)
        and yield its token events as they are sampled (choices interleaved)."""
        job = Job(loop=asyncio.get_running_loop(), **job_args)
        self._queue.put(job)
        done = 0
        try:
            while done < job.n:
                ev = await job.events.get()
                if isinstance(ev, BaseException):
                    raise ev
                if ev is None:
                    return
                if ev.result is not None:
                    done += 1
                yield ev
        finally:
            job.cancelled = True  # a client that went away stops its rows at the next token

    # ----------------------------------------------------------------------------- thread side

    def _absorb(self, item: Any) -> None:
        if item is None:
            self._stopping = True
        elif item is not _WAKE:
            self._pending.append(item)

    def _take_batch(self) -> tuple[str, list[Job]]:
        """The next version's turn: its oldest queued jobs, up to ``max_batch`` rows."""
        self._pending = [j for j in self._pending if not j.cancelled]  # a client that left before its turn
        if not self._pending:
            return "", []
        resolved = [(job, self.versions.resolve(job.version)) for job in self._pending]
        waiting = list(dict.fromkeys(v for _, v in resolved))  # in order of their oldest job
        # the version served least recently (never: first); ties go to the oldest job
        version = min(waiting, key=lambda v: self._turns.get(v, -1))
        jobs: list[Job] = []
        rows = 0
        for job, v in resolved:
            if v == version and rows < self.max_batch:
                jobs.append(job)
                rows += job.n
        taken = set(map(id, jobs))
        self._pending = [j for j in self._pending if id(j) not in taken]
        self._turn += 1
        self._turns[version] = self._turn
        if len(self._turns) > 256:  # names of versions long gone
            self._turns = dict(sorted(self._turns.items(), key=lambda kv: kv[1])[-64:])
        return version, jobs

    def _run(self) -> None:
        while True:
            if not self._pending:
                self._absorb(self._queue.get())
            while True:  # everything queued now joins the choice of the next batch
                try:
                    self._absorb(self._queue.get_nowait())
                except queue.Empty:
                    break
            self._run_control()  # pushes, promotions, discards go first
            if self._stopping:
                return
            version, jobs = self._take_batch()
            if not jobs:
                continue
            try:
                self.versions.activate(version)
                self._decode(jobs, version)
            except Exception as err:  # a failed batch fails its requests, not the server
                log.exception("generation failed")
                for job in jobs:
                    job.loop.call_soon_threadsafe(job.events.put_nowait, err)

    def _decode(self, jobs: list[Job], version: str) -> None:
        requests: list[GenRequest] = []
        owners: list[tuple[Job, int]] = []
        for job in jobs:
            for idx in range(job.n):
                gen = None if job.seed is None else torch.Generator().manual_seed(job.seed + idx)
                constraint = job.constraint() if job.constraint is not None else None
                requests.append(
                    GenRequest(
                        prompt_ids=job.prompt_ids,
                        max_tokens=job.max_tokens,
                        temperature=job.temperature,
                        top_p=job.top_p,
                        generator=gen,
                        stop_ids=job.stop_ids,
                        on_token=self._callback(job, idx, version, constraint),
                        constraint=constraint,
                    )
                )
                owners.append((job, idx))
        self.running_rows, self.running_version = len(requests), version
        try:
            results = generate(self.model, requests, self.tokenizer.pad_token_id)
        finally:
            self.running_rows, self.running_version = 0, None
        self.batches += 1
        self.rows += len(requests)
        for (job, idx), res in zip(owners, results, strict=True):
            ev = TokenEvent(index=idx, token_id=-1, logprob=0.0, text="", result=res, version=version)
            job.loop.call_soon_threadsafe(job.events.put_nowait, ev)

    def _callback(self, job: Job, idx: int, version: str, constraint: LogitsConstraint | None):  # noqa: ANN202 - a TokenCallback
        text = []  # this row's text so far, to find stop strings

        def on_token(token_id: int, logprob: float) -> bool:
            if job.cancelled:
                return False
            # a constrained row's text is what the constraint accepted (generate advanced it already)
            piece = constraint.last_piece if constraint is not None else self.token_text(token_id)
            ev = TokenEvent(index=idx, token_id=token_id, logprob=logprob, text=piece, version=version)
            job.loop.call_soon_threadsafe(job.events.put_nowait, ev)
            if job.stop and piece:
                text.append(piece)
                tail = "".join(text)[-(max(map(len, job.stop)) + len(piece)) :]
                if any(s in tail for s in job.stop):
                    return False
            return True

        return on_token


def _settle(fut: asyncio.Future, result: Any, err: BaseException | None) -> None:
    if fut.done():  # the caller went away
        return
    if err is not None:
        fut.set_exception(err)
    else:
        fut.set_result(result)
