"""One text-completions call recorded as one step: ``Observation.prompt_text``, one choice per sample.

There are no messages to link by, so a completion joins a trajectory only when it is named (header or
``/t/{id}``); otherwise each call starts a new one. vLLM returns token ids per choice here
(``prompt_token_ids`` and ``token_ids``); ``logprobs: 0`` asks for sampled-token logprobs only.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pipeline.proxy.backend_call import BackendCall
from pipeline.proxy.config import BackendConfig
from pipeline.proxy.context import CallContext
from pipeline.proxy.step_event import RawChoice, StepRecord, completion_logprobs
from sluice.events import Message

if TYPE_CHECKING:
    from pipeline.proxy.state import ProxyState


def prompt_text(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        return prompt[0]
    return json.dumps(prompt)


@dataclass(slots=True)
class _Acc:
    text: list[str] = field(default_factory=list)
    finish_reason: str | None = None
    logprobs: list[float] | None = None
    token_ids: list[int] | None = None
    prompt_token_ids: list[int] | None = None


class CompletionStreamAssembler:
    """Rebuild a ``text_completion`` from its chunks (text concatenated per choice index)."""

    def __init__(self) -> None:
        self.head: dict[str, Any] = {}
        self.choices: dict[int, _Acc] = {}
        self.usage: dict[str, Any] | None = None
        self.first_token_at: float | None = None

    def feed(self, chunk: dict[str, Any], now: float = 0.0) -> None:
        if not self.head:
            self.head = {k: chunk.get(k) for k in ("id", "created", "model", "system_fingerprint")}
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        for c in chunk.get("choices") or ():
            if not isinstance(c, dict):
                continue
            acc = self.choices.setdefault(c.get("index", 0), _Acc())
            if c.get("text"):
                acc.text.append(c["text"])
                if self.first_token_at is None:
                    self.first_token_at = now
            if c.get("finish_reason"):
                acc.finish_reason = c["finish_reason"]
            lps = completion_logprobs(c.get("logprobs"))
            if lps is not None:
                acc.logprobs = (acc.logprobs or []) + lps
            if isinstance(c.get("token_ids"), list):
                acc.token_ids = (acc.token_ids or []) + c["token_ids"]
            if acc.prompt_token_ids is None and isinstance(c.get("prompt_token_ids"), list):
                acc.prompt_token_ids = c["prompt_token_ids"]

    @property
    def has_data(self) -> bool:
        return bool(self.choices)

    def finished_all(self) -> bool:
        return bool(self.choices) and all(a.finish_reason for a in self.choices.values())

    def result(self) -> dict[str, Any]:
        choices = []
        for i in sorted(self.choices):
            a = self.choices[i]
            c: dict[str, Any] = {"index": i, "text": "".join(a.text), "finish_reason": a.finish_reason}
            c["logprobs"] = {"token_logprobs": a.logprobs} if a.logprobs is not None else None
            if a.token_ids is not None:
                c["token_ids"] = a.token_ids
            if a.prompt_token_ids is not None:
                c["prompt_token_ids"] = a.prompt_token_ids
            choices.append(c)
        out: dict[str, Any] = {**self.head, "object": "text_completion", "choices": choices}
        if self.usage is not None:
            out["usage"] = self.usage
        return out


class CompletionStep(BackendCall):
    path = "/completions"

    def __init__(
        self,
        state: ProxyState,
        ctx: CallContext,
        request: dict[str, Any],
        raw: bytes | None,
        *,
        backend: BackendConfig,
    ) -> None:
        super().__init__(state, ctx, request, raw, backend)
        plan = state.linker.begin(
            ctx.caller.tenant,
            [b""],
            time.monotonic(),
            ctx.explicit_id,
            ctx.explicit_by,
            subjects=ctx.caller.subject_ids,
        )
        self.record = StepRecord(
            ctx=ctx,
            plan=plan,
            backend=backend,
            operation="text_completion",
            provider="openai",
            request=request,
            stream=self.stream,
            prompt_text=prompt_text(request.get("prompt")),
        )
        self.asked_ids = bool(request.get("return_token_ids"))
        self.asked_logprobs = request.get("logprobs") is not None
        self.want_tokens = backend.return_token_ids
        self.must_strip = self.want_tokens and not (self.asked_ids and self.asked_logprobs)

    def body_changes(self) -> dict[str, Any]:
        changes = super().body_changes()
        if self.want_tokens:
            if not self.asked_ids:
                changes["return_token_ids"] = True
            if not self.asked_logprobs:
                changes["logprobs"] = 0
        return changes

    def _strip(self, obj: dict[str, Any]) -> bool:
        if not self.must_strip:
            return False
        for c in obj.get("choices") or ():
            if isinstance(c, dict):
                if not self.asked_ids:
                    c.pop("token_ids", None)
                    c.pop("prompt_token_ids", None)
                if not self.asked_logprobs:
                    c["logprobs"] = None
        return True

    def strip_response(self, resp: dict[str, Any]) -> bool:
        return self._strip(resp)

    def strip_chunk(self, chunk: dict[str, Any]) -> bool:
        changed = self._strip(chunk)
        if changed and not self.asked_usage:
            chunk.pop("usage", None)
        return changed

    def new_assembler(self) -> CompletionStreamAssembler:
        return CompletionStreamAssembler()

    def complete(self, resp: dict[str, Any] | None) -> None:
        rec = self.record
        if resp is None:
            return
        raw = [c for c in resp.get("choices") or () if isinstance(c, dict)]
        rec.choices = [
            RawChoice(
                c.get("index", i),
                Message(role="assistant", content=str(c.get("text") or "")),
                c.get("finish_reason"),
                c.get("token_ids"),
                completion_logprobs(c.get("logprobs")),
            )
            for i, c in enumerate(raw)
        ]
        rec.choices.sort(key=lambda c: c.index)
        first = min(raw, key=lambda c: c.get("index", 0)) if raw else {}
        ids = first.get("prompt_token_ids")
        if isinstance(ids, list):
            rec.prompt_token_ids = ids
            try:
                rec.prompt_prefix_len = self.state.linker.token_prefix(rec.plan, ids, first.get("token_ids"))
            except (TypeError, OverflowError):
                rec.prompt_prefix_len = 0
