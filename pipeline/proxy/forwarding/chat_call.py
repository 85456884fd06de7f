"""Forwarding: ``ChatCall``, one recorded chat-completions call (every chat-like surface), overlay applied.

OpenAI chat, Anthropic messages and OpenAI responses all become a chat-completions request upstream
(backends speak OpenAI chat only). ``ChatCall`` adds what recording needs to the upstream request (token
ids and logprobs when the backend returns them, ``stream_options.include_usage`` when streaming) and
strips those additions from what the agent receives, so the agent sees a normal response. The plumbing
(post, stream, end the step) is ``backend_call.BackendCall``; the step it records is opened by
``StepRecorder.begin`` (``open_chat_call``) and recorded by ``StepRecorder.finish``.

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

from typing import TYPE_CHECKING, Any

from governance.evolve.overlay_apply import apply_to_chat, restore_chunk, restore_completion
from pipeline.proxy.config import BackendConfig
from pipeline.proxy.control.overlay_routing import choose_overlay
from pipeline.proxy.forwarding.backend_call import BackendCall
from pipeline.proxy.forwarding.chat_stream_assembler import ChatStreamAssembler, tool_call_id
from pipeline.proxy.forwarding.token_strip import TokenStrip
from pipeline.proxy.openai_chat.protocol import ChatCompletionRequest
from pipeline.proxy.recording.step import RawChoice, chat_logprobs
from pipeline.proxy.surfaces.context import CallContext
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


class ChatCall(BackendCall):
    path = "/chat/completions"

    overlay: Overlay | None = None  # applied to the request (``open_chat_call``); renames undone in answers

    def token_strip(self) -> TokenStrip:
        chat, backend = self.request, self.backend
        return TokenStrip(
            want_tokens=backend.return_token_ids,
            asked_ids=bool(chat.return_token_ids),
            asked_logprobs=bool(chat.logprobs),
            logprobs_value=True,
            top_fields=("prompt_token_ids",),
            choice_fields=("token_ids",),
        )

    def prepare_response(self, resp: dict[str, Any]) -> bool:
        renamed = restore_completion(resp, self.overlay)
        return fill_tool_call_ids(resp) or renamed

    def prepare_chunk(self, chunk: dict[str, Any]) -> bool:
        return restore_chunk(chunk, self.overlay)

    def new_assembler(self) -> ChatStreamAssembler:
        return ChatStreamAssembler()

    def read_choices(self, resp: dict[str, Any]) -> tuple[list[RawChoice], list[int] | None]:
        choices = [
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
        choices.sort(key=lambda c: c.index)
        ids = resp.get("prompt_token_ids")
        return choices, ids if isinstance(ids, list) else None


def open_chat_call(
    state: ProxyState,
    ctx: CallContext,
    chat: ChatCompletionRequest,
    backend: BackendConfig,
    *,
    operation: str,
    provider: str,
    task_id: str | None = None,
) -> ChatCall:
    """Open the chat step (its trajectory, index and delta), choose its overlay, and build its call."""
    recorder = state.recorder
    step = recorder.begin(ctx, chat, backend=backend, operation=operation, provider=provider, task_id=task_id)
    overlay: Overlay | None = None
    overlays = state.overlays
    choice = (
        choose_overlay(overlays, step.plan.tenant, step.task_id, step.plan.trajectory_id, state.config.routes)
        if overlays
        else None
    )
    if choice is not None and choice.assignment is not None:
        step.overlay_id, step.overlay_arm = choice.overlay_id, choice.arm
        overlay = choice.overlay
    if overlay is not None and not overlay.is_empty():
        # the step keeps what the agent sent; the backend gets the overlaid request, serialised once
        chat = ChatCompletionRequest.model_construct(
            **apply_to_chat(chat.model_dump(exclude_unset=True), overlay)
        )
    call = ChatCall(state.upstreams, state.metrics, recorder, step, chat)
    call.overlay = overlay
    call.policy_request = choice.policy_version if choice is not None else None
    if backend.return_token_ids:  # a policy server keeps this conversation's token ids under it
        call.conversation = step.plan.trajectory_id
    return call
