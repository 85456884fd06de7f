"""OpenAI completions: ``CompletionCall``, one recorded text-completions call to a backend.

There are no messages to link by, so a completion joins a trajectory only when it is named (header or
``/t/{id}``); otherwise each call starts a new one. vLLM returns token ids per choice here
(``prompt_token_ids`` and ``token_ids``); ``logprobs: 0`` asks for sampled-token logprobs only.
"""

from __future__ import annotations

import json
from typing import Any

from pipeline.proxy.forwarding.backend_call import BackendCall
from pipeline.proxy.forwarding.token_strip import TokenStrip
from pipeline.proxy.openai_completions.assembler import CompletionStreamAssembler
from pipeline.proxy.recording.step import RawChoice, completion_logprobs
from sluice.events import Message


def prompt_text(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        return prompt[0]
    return json.dumps(prompt)


class CompletionCall(BackendCall):
    path = "/completions"

    def token_strip(self) -> TokenStrip:
        request = self.request
        return TokenStrip(
            want_tokens=self.backend.return_token_ids,
            asked_ids=bool(request.return_token_ids),
            asked_logprobs=request.logprobs is not None,
            logprobs_value=0,
            top_fields=(),
            choice_fields=("token_ids", "prompt_token_ids"),
        )

    def new_assembler(self) -> CompletionStreamAssembler:
        return CompletionStreamAssembler()

    def read_choices(self, resp: dict[str, Any]) -> tuple[list[RawChoice], list[int] | None]:
        raw = [c for c in resp.get("choices") or () if isinstance(c, dict)]
        choices = [
            RawChoice(
                c.get("index", i),
                Message(role="assistant", content=str(c.get("text") or "")),
                c.get("finish_reason"),
                c.get("token_ids"),
                completion_logprobs(c.get("logprobs")),
            )
            for i, c in enumerate(raw)
        ]
        choices.sort(key=lambda c: c.index)
        first = min(raw, key=lambda c: c.get("index", 0)) if raw else {}
        ids = first.get("prompt_token_ids")
        return choices, ids if isinstance(ids, list) else None
