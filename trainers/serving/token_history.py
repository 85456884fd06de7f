"""Token-in-token-out history: a re-sent conversation keeps the token ids the server already used for it.

An agent re-sends the whole history on every call, as text. Tokenizing that text again need not give the
ids the model actually read and wrote: a sampled completion (a schema-steered tool call above all) is often
not the tokenizer's canonical split of its own text, so the next prompt's ids would stop being the previous
prompt + completion, and a trainer could no longer lay the turns end to end as one sequence. The server
therefore remembers, for its recent calls, the rendered prompt text + the completion's text and the ids
prompt + completion, and encodes a new prompt as the longest remembered sequence whose text it starts with,
followed by the tokenizer's ids of the rest. The ids still decode to the prompt's text; only the split
follows what was served. Two conversations can hold the same text sampled as different tokens (the members
of a GRPO group answer the same question), so a call that names its conversation (the proxy sends the
trajectory id to a backend it asks for token ids) is matched only with that conversation's sequences.
A completion is remembered under its text as the client will render it back: the ids decoded (special
tokens included: an end-of-turn token is text the next prompt renders) or, for a schema-forced tool call,
the arguments text the server returned, which is exactly its tokens' bytes (a tokenizer's ``decode`` of a
piece of a sequence may differ from those bytes, e.g. a leading space dropped).
Bounded: ``capacity`` sequences, least recently used dropped first; in memory only. An erasure drops
the erased conversations' sequences at once (``forget``), since they hold the text as the agent sent it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

DEFAULT_CAPACITY = 512


class TokenHistory:
    def __init__(self, tokenizer: Any, capacity: int = DEFAULT_CAPACITY) -> None:
        self.tok, self.capacity = tokenizer, capacity
        # (conversation, text) -> its ids, least recent first
        self._seqs: OrderedDict[tuple[str | None, str], list[int]] = OrderedDict()
        self._lock = threading.Lock()
        self.reused = 0  # prompts that extended a remembered sequence

    def _ids(self, text: str) -> list[int]:
        return list(self.tok(text, add_special_tokens=False)["input_ids"]) if text else []

    def encode(self, text: str, conversation: str | None = None) -> list[int]:
        """Ids of a rendered prompt: a remembered sequence of its conversation it extends (the longest),
        then the rest."""
        with self._lock:
            found = [k for k in self._seqs if k[0] == conversation and text.startswith(k[1])]
            best = max(found, key=lambda k: len(k[1]), default=None)
            ids = list(self._seqs[best]) if best is not None else []
            if best is not None:
                self._seqs.move_to_end(best)
                self.reused += 1
        return ids + self._ids(text[len(best[1]) if best is not None else 0 :])

    def remember(
        self,
        prompt_text: str,
        prompt_ids: list[int],
        completion_ids: list[int],
        conversation: str | None = None,
        completion_text: str | None = None,
    ) -> None:
        """Keep prompt + completion for the call that may re-send it, under ``completion_text`` (the exact
        text ``completion_ids`` stand for, as the next prompt renders it) or, None, the ids decoded."""
        if completion_text is None:
            completion_text = self.tok.decode(
                completion_ids, skip_special_tokens=False, clean_up_tokenization_spaces=False
            )
        text = prompt_text + completion_text
        with self._lock:
            key = (conversation, text)
            self._seqs[key] = list(prompt_ids) + list(completion_ids)
            self._seqs.move_to_end(key)
            while len(self._seqs) > self.capacity:
                self._seqs.popitem(last=False)

    def forget(self, conversations: set[str]) -> int:
        """Drop every remembered sequence of these conversations; returns how many were dropped."""
        with self._lock:
            gone = [k for k in self._seqs if k[0] is not None and k[0] in conversations]
            for k in gone:
                del self._seqs[k]
        return len(gone)
