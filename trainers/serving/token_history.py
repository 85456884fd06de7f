"""Token-in-token-out history: a re-sent conversation keeps the token ids the server already used for it.

An agent re-sends the whole history on every call, as text. Tokenizing that text again need not give the
ids the model actually read and wrote: a sampled completion (a schema-steered tool call above all) is often
not the tokenizer's canonical split of its own text, so the next prompt's ids would stop being the previous
prompt + completion, and a trainer could no longer lay the turns end to end as one sequence. The server
therefore remembers, for its recent calls, the rendered prompt text + the completion's text and the ids
prompt + completion, and encodes a new prompt as the longest remembered sequence whose text it starts with,
followed by the tokenizer's ids of the rest. The ids still decode to the prompt's text; only the split
follows what was served. Bounded: ``capacity`` sequences, least recently used dropped first; in memory only.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

DEFAULT_CAPACITY = 512


class TokenHistory:
    def __init__(self, tokenizer: Any, capacity: int = DEFAULT_CAPACITY) -> None:
        self.tok, self.capacity = tokenizer, capacity
        self._seqs: OrderedDict[str, list[int]] = OrderedDict()  # text -> its ids, least recent first
        self._lock = threading.Lock()
        self.reused = 0  # prompts that extended a remembered sequence

    def _ids(self, text: str) -> list[int]:
        return list(self.tok(text, add_special_tokens=False)["input_ids"]) if text else []

    def encode(self, text: str) -> list[int]:
        """Ids of a rendered prompt: a remembered sequence it extends (the longest), then the rest."""
        with self._lock:
            best = max((t for t in self._seqs if text.startswith(t)), key=len, default="")
            ids = list(self._seqs[best]) if best else []
            if best:
                self._seqs.move_to_end(best)
                self.reused += 1
        return ids + self._ids(text[len(best) :])

    def remember(self, prompt_text: str, prompt_ids: list[int], completion_ids: list[int]) -> None:
        """Keep prompt + completion for the call that may re-send it (the completion's text as decoded,
        special tokens included: an end-of-turn token is text the next prompt renders)."""
        text = prompt_text + self.tok.decode(
            completion_ids, skip_special_tokens=False, clean_up_tokenization_spaces=False
        )
        with self._lock:
            self._seqs[text] = list(prompt_ids) + list(completion_ids)
            self._seqs.move_to_end(text)
            while len(self._seqs) > self.capacity:
                self._seqs.popitem(last=False)
