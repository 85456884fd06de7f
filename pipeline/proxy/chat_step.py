"""One chat-completions call, recorded as one step (shared by every chat-like surface).

OpenAI chat, Anthropic messages and OpenAI responses all become a chat-completions request upstream
(backends speak OpenAI chat only). ``ChatStep`` decides the trajectory and the observation delta before
the call, adds what recording needs to the upstream request (token ids and logprobs when the backend
returns them, ``stream_options.include_usage`` when streaming), and strips those additions from what the
agent receives, so the agent sees a normal response. The plumbing (post, stream, finish) is
``backend_call.BackendCall``.

When a control-plane assignment covers the request's scope (``overlay_routing``), the arm's overlay is
applied to what the backend receives (``apply_to_chat``: every chat-like surface reaches the backend as
chat, so one place covers them all), and calls to tools it renamed get the agent's names back before
anything is recorded or relayed, streamed chunks included. The step records the overlay's id and arm.
Its observation stays what the agent sent, not what the backend received: history linking compares
the next request with the messages recorded here, the harness and tools fingerprints stay the agent's
own, and the overlay's edits are reconstructable from the ledger by ``overlay_id``. What the model
actually read is kept where the backend reports it: ``prompt_token_ids`` are the overlaid prompt's.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from governance.evolve.overlay_apply import apply_to_chat, restore_chunk, restore_completion
from pipeline.proxy.backend_call import BackendCall, metadata_task_id
from pipeline.proxy.canonical import event_message, fingerprint, harness_fingerprint, link_chain, link_extend
from pipeline.proxy.config import BackendConfig
from pipeline.proxy.context import CallContext
from pipeline.proxy.exceptions import ApiError
from pipeline.proxy.openai_chat.assembler import ChatStreamAssembler, tool_call_id
from pipeline.proxy.overlay_routing import choose_overlay
from pipeline.proxy.step_event import RawChoice, StepRecord, chat_logprobs
from sluice.evolution import Overlay

if TYPE_CHECKING:
    from pipeline.proxy.state import ProxyState


def fill_tool_call_ids(resp: dict[str, Any]) -> bool:
    """Give every tool call an id (agents must echo it back); True if anything changed."""
    changed = False
    for c in resp.get("choices") or ():
        msg = c.get("message") if isinstance(c, dict) else None
        for j, tc in enumerate((msg or {}).get("tool_calls") or ()):
            if isinstance(tc, dict) and not tc.get("id"):
                tc["id"] = tool_call_id(resp.get("id"), c.get("index", 0), j)
                changed = True
    return changed


class ChatStep(BackendCall):
    path = "/chat/completions"

    def __init__(
        self,
        state: ProxyState,
        ctx: CallContext,
        chat: dict[str, Any],
        raw: bytes | None,
        *,
        backend: BackendConfig,
        operation: str = "chat",
        provider: str = "openai",
        task_id: str | None = None,
    ) -> None:
        super().__init__(state, ctx, chat, raw, backend)
        self.chat = chat
        messages = chat.get("messages")
        if not isinstance(messages, list) or not messages:
            raise ApiError(400, "messages: must be a non-empty list of messages", param="messages")
        self.chain = link_chain(messages)
        tools = chat.get("tools") or None
        tools_fp = fingerprint(tools) if tools else None
        linker = state.linker
        plan = linker.begin(
            ctx.caller.tenant,
            self.chain,
            time.monotonic(),
            ctx.explicit_id,
            ctx.explicit_by,
            tools_fp,
            subjects=ctx.caller.subject_ids,
        )
        try:
            start = plan.prefix_count
            delta = [event_message(m, f"messages[{i}]") for i, m in enumerate(messages[start:], start)]
        except ApiError:
            linker.abandon(plan)
            raise
        self.record = StepRecord(
            ctx=ctx,
            plan=plan,
            backend=backend,
            operation=operation,
            provider=provider,
            request=chat,
            stream=self.stream,
            delta=delta,
            tools=tools if plan.tools_changed else None,
            tools_fp=tools_fp,
            harness_fp=harness_fingerprint(messages),
            task_id=ctx.task_id or task_id or metadata_task_id(chat),
        )
        self.overlay: Overlay | None = None
        overlays = state.overlays
        choice = (
            choose_overlay(overlays, plan.tenant, self.record.task_id, plan.trajectory_id)
            if overlays
            else None
        )
        if choice is not None:
            self.record.overlay_id, self.record.overlay_arm = choice.overlay_id, choice.arm
            self.overlay = choice.overlay
            if self.overlay is not None and not self.overlay.is_empty():
                self.request, self.raw = apply_to_chat(chat, self.overlay), None
        self.asked_ids = bool(chat.get("return_token_ids"))
        self.asked_logprobs = bool(chat.get("logprobs"))
        self.want_tokens = backend.return_token_ids
        self.must_strip = self.want_tokens and not (self.asked_ids and self.asked_logprobs)

    def body_changes(self) -> dict[str, Any]:
        changes = super().body_changes()
        if self.want_tokens:
            if not self.asked_ids:
                changes["return_token_ids"] = True
            if not self.asked_logprobs:
                changes["logprobs"] = True
        return changes

    def prepare_response(self, resp: dict[str, Any]) -> bool:
        renamed = restore_completion(resp, self.overlay)
        return fill_tool_call_ids(resp) or renamed

    def prepare_chunk(self, chunk: dict[str, Any]) -> bool:
        return restore_chunk(chunk, self.overlay)

    def strip_response(self, resp: dict[str, Any]) -> bool:
        if not self.must_strip:
            return False
        self._strip(resp)
        return True

    def strip_chunk(self, chunk: dict[str, Any]) -> bool:
        if not self.must_strip:
            return False
        self._strip(chunk)
        if not self.asked_usage:
            chunk.pop("usage", None)
        return True

    def _strip(self, obj: dict[str, Any]) -> None:
        if not self.asked_ids:
            obj.pop("prompt_token_ids", None)
        for c in obj.get("choices") or ():
            if isinstance(c, dict):
                if not self.asked_ids:
                    c.pop("token_ids", None)
                if not self.asked_logprobs:
                    c["logprobs"] = None

    def new_assembler(self) -> ChatStreamAssembler:
        return ChatStreamAssembler()

    def complete(self, resp: dict[str, Any] | None) -> None:
        """Choices into the record; remember the history (per choice) for linking; token prefix."""
        rec, linker = self.record, self.state.linker
        links: list[bytes] = []
        reply = None
        if resp is not None:
            rec.choices = [
                RawChoice(
                    c.get("index", i),
                    c.get("message") or {},
                    c.get("finish_reason"),
                    c.get("token_ids"),
                    chat_logprobs(c.get("logprobs")),
                )
                for i, c in enumerate(resp.get("choices") or ())
                if isinstance(c, dict)
            ]
            rec.choices.sort(key=lambda c: c.index)
            ids = resp.get("prompt_token_ids")
            rec.prompt_token_ids = ids if isinstance(ids, list) else None
            try:
                messages = [{"role": "assistant", **c.message} for c in rec.choices]  # type: ignore[dict-item]
                if messages:
                    reply = event_message(messages[0], "choices[0].message")
                    rec.choices[0].message = reply
                links = [link_extend(self.chain[-1], m) for m in messages]
            except (ApiError, TypeError):
                reply, links = None, []  # the event build will dead-letter it with the reason
        linker.complete(rec.plan, self.chain, rec.delta, links, reply, time.monotonic())
        if rec.prompt_token_ids is not None:
            try:
                first = rec.choices[0].token_ids if rec.choices else None
                rec.prompt_prefix_len = linker.token_prefix(rec.plan, rec.prompt_token_ids, first)
            except (TypeError, OverflowError):
                rec.prompt_prefix_len = 0
