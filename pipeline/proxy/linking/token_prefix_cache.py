"""Linking: each trajectory's last token sequence as keyed digests, for the next step's token prefix.

For every trajectory the cache keeps the prompt + choice-0 completion ids of its latest step as a chain of
8-byte keyed digests, one per ``TOKEN_BLOCK`` tokens, plus one over the whole sequence (``TokenChain``):
never the ids themselves. The usual append-only case is exact; after retokenisation drift the prefix is
rounded down to a block boundary (at most ``TOKEN_BLOCK - 1`` tokens more in the step, never a wrong
prefix). Memory is bounded twice: a sequence over ``max_tokens`` is not kept, and the tokens covered by all
kept sequences stay under ``token_budget`` (least recently stored dropped first; that trajectory's next
step carries its full prompt).
"""

from __future__ import annotations

import hashlib
from array import array
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

TOKEN_BLOCK = 16  # tokens per digest
DIGEST_BYTES = 8


class TokenChain:
    """Keyed digests of a token-id sequence: one per ``TOKEN_BLOCK`` tokens (chained), one for it all."""

    def __init__(self, key: bytes) -> None:
        self.key = key

    def _h(self, seed: bytes, data: bytes) -> bytes:
        return hashlib.blake2b(seed + data, digest_size=DIGEST_BYTES, key=self.key).digest()

    def blocks(self, ids: array) -> bytes:
        raw = ids.tobytes()
        step = TOKEN_BLOCK * ids.itemsize
        out, h = bytearray(), b""
        for i in range(0, len(raw) - step + 1, step):
            h = self._h(h, raw[i : i + step])
            out += h
        return bytes(out)

    def tail(self, chain: bytes, ids: array) -> bytes:
        """Digest of the whole of ``ids`` given its block chain (the last block digest + the rest)."""
        full = len(ids) // TOKEN_BLOCK
        last = chain[(full - 1) * DIGEST_BYTES : full * DIGEST_BYTES] if full else b""
        return self._h(b"tail" + last, ids[full * TOKEN_BLOCK :].tobytes())


Key = tuple[str, str]  # (tenant, trajectory id)


@dataclass(slots=True)
class _Tokens:
    step: int = -1  # the step whose sequence is (or was) kept
    chain: bytes | None = None  # keyed digests of prompt + choice-0 completion ids, per block
    length: int = 0  # length of that sequence
    tail: bytes = b""  # keyed digest of the whole sequence


def common_prefix_len(a: array | bytes, b: array | bytes) -> int:
    """Length of the common leading run of two int arrays or byte strings (slice compares run in C)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo] and a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


class TokenPrefixCache:
    def __init__(self, hash_key: bytes, max_tokens: int, token_budget: int) -> None:
        self.max_tokens = max_tokens  # per trajectory
        self.token_budget = token_budget  # tokens covered, over all trajectories (1 byte each in digests)
        self._chain = TokenChain(hash_key)
        self._entries: dict[Key, _Tokens] = {}
        self._lru: OrderedDict[Key, None] = OrderedDict()  # keys holding a sequence, least recent first
        self.total = 0  # tokens covered by the kept sequences

    def prefix(
        self, key: Key, step_index: int, prompt_ids: list[int], completion_ids: list[int] | None
    ) -> int:
        """prompt_token_prefix_len for this step, and remember prompt + completion for the next one."""
        entry = self._entries.setdefault(key, _Tokens())
        prompt = array("i", prompt_ids)
        full = prompt + array("i", completion_ids or [])
        chain = self._chain.blocks(full)
        prefix = 0
        if entry.chain is not None and entry.step == step_index - 1:
            usable = min(len(entry.chain), (len(prompt) // TOKEN_BLOCK) * DIGEST_BYTES)
            same = common_prefix_len(chain[:usable], entry.chain[:usable]) // DIGEST_BYTES
            prefix = same * TOKEN_BLOCK
            extends = same * DIGEST_BYTES == len(entry.chain) and entry.length <= len(prompt)
            if extends and self._chain.tail(chain, prompt[: entry.length]) == entry.tail:
                prefix = entry.length  # the usual case: the prompt extends the previous sequence
        if step_index >= entry.step:
            self._clear(key, entry)
            entry.step = step_index
            if len(full) <= self.max_tokens:
                self._keep(key, entry, chain, len(full), self._chain.tail(chain, full))
        return prefix

    def _keep(self, key: Key, entry: _Tokens, chain: bytes, length: int, tail: bytes) -> None:
        entry.chain, entry.length, entry.tail = chain, length, tail
        self.total += length
        self._lru[key] = None
        while self.total > self.token_budget and self._lru:
            oldest = next(iter(self._lru))
            self._clear(oldest, self._entries[oldest])  # it starts over: full prompt next step

    def _clear(self, key: Key, entry: _Tokens) -> None:
        if entry.chain is not None:
            self.total -= entry.length
            entry.chain, entry.length, entry.tail = None, 0, b""
        self._lru.pop(key, None)

    def drop(self, key: Key) -> None:
        """Forget a trajectory (evicted or erased)."""
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._clear(key, entry)

    # ------------------------------------------------------------------ restarts

    def snapshot(self, key: Key) -> dict[str, Any]:
        """The trajectory's fields of ``links.json`` (digests only)."""
        e = self._entries.get(key) or _Tokens()
        return {
            "token_step": e.step,
            "token_chain": e.chain.hex() if e.chain is not None else None,
            "token_len": e.length,
            "token_tail": e.tail.hex(),
        }

    def restore(self, key: Key, s: dict[str, Any]) -> None:
        """Take a trajectory's fields back from ``links.json`` (a sequence over ``max_tokens`` is not kept)."""
        self.drop(key)
        entry = self._entries[key] = _Tokens(step=int(s.get("token_step", -1)))
        if s.get("token_chain") is not None and int(s.get("token_len", 0)) <= self.max_tokens:
            entry.chain = bytes.fromhex(s["token_chain"])
            entry.length = int(s["token_len"])
            entry.tail = bytes.fromhex(s.get("token_tail", ""))
            self.total += entry.length
            self._lru[key] = None
