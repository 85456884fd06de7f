"""Forwarding: token ids and logprobs asked of the backend for the recording, stripped from the answer.

When a backend returns token ids (``BackendConfig.return_token_ids``) the recording asks for them and for
sampled-token logprobs even when the agent did not, and strips from the answer (and from each streamed
chunk) exactly what the agent did not ask for, so the agent sees a normal response. The surfaces differ
only in where the ids sit and how logprobs are asked for (chat: ``true``; completions: ``0``).
"""

from __future__ import annotations

from typing import Any


class TokenStrip:
    def __init__(
        self,
        *,
        want_tokens: bool,
        asked_ids: bool,
        asked_logprobs: bool,
        logprobs_value: Any,
        top_fields: tuple[str, ...],
        choice_fields: tuple[str, ...],
    ) -> None:
        self.want_tokens, self.asked_ids, self.asked_logprobs = want_tokens, asked_ids, asked_logprobs
        self.logprobs_value = logprobs_value
        self.top_fields, self.choice_fields = top_fields, choice_fields
        self.must_strip = want_tokens and not (asked_ids and asked_logprobs)

    def body_changes(self) -> dict[str, Any]:
        """What to add to the upstream request."""
        changes: dict[str, Any] = {}
        if self.want_tokens:
            if not self.asked_ids:
                changes["return_token_ids"] = True
            if not self.asked_logprobs:
                changes["logprobs"] = self.logprobs_value
        return changes

    def strip(self, obj: dict[str, Any]) -> bool:
        """Remove from an answer or chunk what only the recording asked for; True if it had to look."""
        if not self.must_strip:
            return False
        if not self.asked_ids:
            for name in self.top_fields:
                obj.pop(name, None)
        for c in obj.get("choices") or ():
            if isinstance(c, dict):
                if not self.asked_ids:
                    for name in self.choice_fields:
                        c.pop(name, None)
                if not self.asked_logprobs:
                    c["logprobs"] = None
        return True
