"""Recording: ``StepRecorder`` places each call in its trajectory (``begin``) and records it (``finish``).

One ``StepRecorder`` lives on the proxy state and is the only code that drives the history linker and
the only publisher of what agents record (steps, ends, rewards); the rest of the proxy asks it
(``extendable``, ``is_erased``, ``end``, ``forget``, ``snapshot``/``restore``). ``begin`` links the call
to its trajectory, assigns its step index and computes the observation delta, returning the ``Step``;
the backend call (``forwarding.backend_call``) ends the step with what the backend answered and hands it
to ``finish``, which remembers the history for linking (and the token prefix) and hands the step to the
publisher before the agent's response completes, never losing one silently.

Inside a request (``collect_steps``, set by the proxy's durability middleware) ``finish`` only queues
the step; the middleware builds and publishes it (``publish_collected``) just before it sends the next
piece of the response, and sends that piece once the publisher says the event is durable. So the agent
never holds an answer whose step could still be lost, and a streamed step costs the agent nothing until
its last chunk. Outside a request the build + encode runs on the event loop right after the current
callback (``loop.call_soon``). If an event can not be built (a backend answered something the protocol
can not hold), a ``DeadLetter`` with the reason goes to the dead-letter topic instead.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from pipeline.proxy.config import BackendConfig
from pipeline.proxy.exceptions import ApiError
from pipeline.proxy.linking.canonical import event_message, fingerprint, harness_fingerprint, link_extend
from pipeline.proxy.linking.history_linker import HistoryLinker
from pipeline.proxy.linking.link_chain_cache import LinkChainCache
from pipeline.proxy.openai_chat.protocol import ChatCompletionRequest
from pipeline.proxy.ops.metrics import ProxyMetrics
from pipeline.proxy.publishing.base import EventPublisher
from pipeline.proxy.publishing.step_journal import StepJournal
from pipeline.proxy.recording.step import Step, UpstreamRequest
from pipeline.proxy.recording.step_event import step_event_bytes
from pipeline.proxy.surfaces.context import CallContext
from pipeline.proxy.surfaces.request import OpenModel
from pipeline.proxy.trajectories.seen import SeenTrajectories
from sluice.errors import validation_summary
from sluice.events import (
    TASK_ID_METADATA_KEY,
    DeadLetter,
    ErasureEvent,
    RewardEvent,
    TrajectoryEndEvent,
    encode,
)

log = logging.getLogger(__name__)

_collected: contextvars.ContextVar[list[Step] | None] = contextvars.ContextVar(
    "sluice_collected_steps", default=None
)


@dataclass(frozen=True, slots=True)
class Topics:
    steps: str
    rewards: str
    deadletter: str


def _reason(err: Exception) -> str:
    if isinstance(err, ValidationError):
        return ("step event invalid: " + validation_summary(err))[:2000]
    if isinstance(err, ApiError):  # canonical.event_message: a field path and a reason, no values
        return ("step event invalid: " + err.message)[:2000]
    return f"step event could not be built: {type(err).__name__}"


def metadata_task_id(request: OpenModel) -> str | None:
    """The task id an agent names in the request body's ``metadata`` (when no header names one)."""
    meta = getattr(request, "metadata", None)
    value = meta.get(TASK_ID_METADATA_KEY) if isinstance(meta, dict) else None
    return str(value)[:256] if value not in (None, "") else None


def collect_steps(steps: list[Step]) -> contextvars.Token[list[Step] | None]:
    """Steps finished in this request's context go to ``steps`` until ``publish_collected``."""
    return _collected.set(steps)


def end_collecting(token: contextvars.Token[list[Step] | None]) -> None:
    _collected.reset(token)


class StepRecorder:
    """Owns the linker and the publisher: every step goes ``begin`` -> backend call -> ``finish``."""

    def __init__(
        self,
        linker: HistoryLinker,
        publisher: EventPublisher,
        topics: Topics,
        metrics: ProxyMetrics,
        journal: StepJournal,
        *,
        publishing: bool,
        on_journal_full: Callable[[], None],
        seen: SeenTrajectories,
        chains: LinkChainCache | None = None,
    ) -> None:
        self._linker = linker
        self._chains = chains if chains is not None else LinkChainCache()
        self.publisher = publisher
        self.topics = topics
        self.metrics = metrics
        self.journal = journal
        self.publishing = publishing  # proxy.publish=false (benchmarks of the bare proxy): no event is built
        self._on_journal_full = on_journal_full
        self.seen = seen  # what GET /v1/trajectories/{id} reports before a trajectory lands
        self._steps_counted = metrics.events.labels("step")  # once: a labels() lookup per step costs more

    # ------------------------------------------------------------------ begin

    def begin(
        self,
        ctx: CallContext,
        request: UpstreamRequest,
        *,
        backend: BackendConfig,
        operation: str,
        provider: str,
        prompt_text: str | None = None,
        task_id: str | None = None,
    ) -> Step:
        """Place the call in its trajectory and open its step.

        A chat request is linked by its history and the step's observation is the delta after the
        longest known boundary; a text completion (no messages) joins a named trajectory or starts a new
        one.
        """
        tenant = ctx.caller.tenant
        messages = request.messages if isinstance(request, ChatCompletionRequest) else None
        found = self._chains.chain(tenant, messages) if messages is not None else None
        chain = found.chain if found is not None else None
        tools = request.tools or None if isinstance(request, ChatCompletionRequest) else None
        tools_fp = fingerprint(tools) if tools else None
        plan = self._linker.begin(
            tenant,
            chain if chain is not None else [b""],
            time.monotonic(),
            ctx.explicit_id,
            ctx.explicit_by,
            tools_fp,
            subjects=ctx.caller.subject_ids,
        )
        if found is not None:
            self._chains.remember(tenant, plan.trajectory_id, found.chain, found.packed)
        step = Step(
            ctx=ctx,
            plan=plan,
            backend=backend,
            operation=operation,
            provider=provider,
            request=request,
            stream=bool(request.stream),
            chain=chain,
            prompt_text=prompt_text,
            task_id=ctx.task_id or task_id or metadata_task_id(request),
        )
        if messages is not None:
            try:
                start = plan.prefix_count
                step.delta = [
                    event_message(m, f"messages[{i}]") for i, m in enumerate(messages[start:], start)
                ]
            except ApiError:
                self._linker.abandon(plan)
                raise
            step.tools = tools if plan.tools_changed else None
            step.tools_fp = tools_fp
            step.harness_fp = harness_fingerprint(messages)
        return step

    # ------------------------------------------------------------------ finish

    def finish(self, step: Step) -> None:
        """Remember the history the ended step adds, then publish it before the response goes on (or
        soon, outside a request)."""
        if step.chain is not None:
            self._link(step)
        ids = step.prompt_token_ids
        if ids is not None:
            try:
                first = step.choices[0].token_ids if step.choices else None
                step.prompt_prefix_len = self._linker.token_prefix(step.plan, ids, first)
            except (TypeError, OverflowError):
                step.prompt_prefix_len = 0
        collected = _collected.get()
        if collected is not None:
            collected.append(step)
            return
        try:
            asyncio.get_running_loop().call_soon(self._after_response, step)
        except RuntimeError:  # no loop (unit use): now
            self._after_response(step)

    def _link(self, step: Step) -> None:
        """The history after a chat step (one link per choice) for linking and the next step's delta."""
        chain = step.chain
        assert chain is not None
        links: list[bytes] = []
        reply = None
        try:
            messages = [{"role": "assistant", **c.message} for c in step.choices]  # type: ignore[dict-item]
            if messages:
                reply = event_message(messages[0], "choices[0].message")
                step.choices[0].message = reply
            links = [link_extend(chain[-1], m) for m in messages]
        except (ApiError, TypeError):
            reply, links = None, []  # the event build will dead-letter it with the reason
        self._linker.complete(step.plan, chain, step.delta, links, reply, time.monotonic())

    def publish_collected(self, steps: list[Step]) -> None:
        """Build and publish the collected steps, in the order they finished."""
        while steps:
            self._after_response(steps.pop(0))

    def _after_response(self, step: Step) -> None:
        plan = step.plan
        self.seen.step(plan.tenant, plan.trajectory_id, plan.step_index)
        self._linker.settle(plan)  # exact prefix hashes, so the linker keeps no message text
        # before the response: the next step index and the delta boundaries the step left behind
        boundaries, tools_fp = self._linker.journal_fields(plan.tenant, plan.trajectory_id)
        self.journal.record(plan.tenant, plan.trajectory_id, plan.step_index + 1, boundaries, tools_fp)
        if self.journal.full:
            self._on_journal_full()
        if self.publishing:
            self._publish(step)

    def _publish(self, step: Step) -> None:
        key = step.plan.trajectory_id
        try:
            data = step_event_bytes(step)
        except Exception as err:  # noqa: BLE001 - whatever broke, the step must not vanish without a trace
            reason = _reason(err)  # never the offending values: they may be raw traffic
            log.error("step %s/%d could not be recorded: %s", key, step.plan.step_index, reason)
            letter = DeadLetter.of("proxy", reason, type(err).__name__, key=key)
            self.publisher.publish(self.topics.deadletter, key, encode(letter))
            self.metrics.events.labels("deadletter").inc()
            return
        self.publisher.publish(self.topics.steps, key, data)
        self._steps_counted.inc()

    # ------------------------------------------------------------------ the trajectory API

    def record_reward(self, event: RewardEvent) -> None:
        self.seen.reward(event.tenant, event.trajectory_id)
        self.publisher.publish(self.topics.rewards, event.trajectory_id, encode(event))
        self.metrics.events.labels("reward").inc()

    def end(self, tenant: str, trajectory_id: str) -> int | None:
        """Close the trajectory for history linking; the step count linking knew for it (None: unknown)."""
        self.seen.end(tenant, trajectory_id)
        return self._linker.end(tenant, trajectory_id, time.monotonic())

    def record_end(self, event: TrajectoryEndEvent) -> None:
        self.publisher.publish(self.topics.steps, event.trajectory_id, encode(event))
        self.metrics.events.labels("end").inc()

    # ------------------------------------------------------------------ linking state

    def extendable(self, tenant: str, trajectory_id: str, now: float) -> bool:
        """Whether a call may still continue ``trajectory_id`` (known, open, not erased)."""
        return self._linker.extendable(tenant, trajectory_id, now)

    def is_erased(self, trajectory_id: str) -> bool:
        return self._linker.is_erased(trajectory_id)

    def digest(self, value: str) -> bytes:
        """The keyed digest linking keeps instead of an id (subject ids in response chains use it too)."""
        return self._linker.digest(value)

    def linked(self) -> int:
        """How many trajectories linking holds."""
        return len(self._linker)

    def forget(self, erasure: ErasureEvent) -> int:
        """Drop the linking state an erasure covers; the number of trajectories dropped."""
        self._chains.clear()
        return self._linker.forget(erasure)

    def snapshot(self) -> dict[str, Any]:
        return self._linker.snapshot(time.monotonic())

    def restore(self, data: dict[str, Any]) -> None:
        self._linker.restore(data, time.monotonic())

    def continue_from_journal(self) -> int | None:
        """After a crash: trajectories whose steps the journal recorded after the last snapshot continue
        their step numbering (and delta boundaries) from it; how many did (None: the journal is empty)."""
        entries = self.journal.entries()
        if not entries:
            return None
        known = {(s["tenant"], s["trajectory_id"]): s["next_step"] for s in self.snapshot()["states"]}
        behind = [
            {
                "tenant": t,
                "trajectory_id": tid,
                "age_s": 0.0,
                "next_step": e.next_step,
                "boundaries": e.boundaries,
                "tools_fp": e.tools_fp,
            }
            for (t, tid), e in entries.items()
            if known.get((t, tid), 0) < e.next_step
        ]
        if behind:
            self.restore({"states": behind})
        return len(behind)
