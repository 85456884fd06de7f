"""Linking: link chains of chat histories, hashing only the messages new since the last step.

``canonical.link_chain`` is a rolling digest: ``chain[k] = blake2b(chain[k-1] + link_key(message k))``.
Computing it from scratch costs one lenient normalisation + JSON encode + digest per message (most of a
long agent history's per-request CPU). An agent re-sends its whole history on every call, so this cache
keeps, per trajectory (LRU, bounded by an estimate of the bytes it holds), the chain of the last step's input
messages and a digest of their exact wire form (msgpack, one C call per message, one streaming BLAKE2b
over all of them). A call whose first ``count`` messages pack to the same bytes as a remembered input
reuses its ``chain[:count + 1]`` and link-hashes only ``messages[count:]``: the reply it re-sends and what
it adds. Calls shorter than ``min_messages`` are hashed whole and not kept: that costs less than keeping
them (one-shot calls of a system prompt and a question are most of some workloads).

Why it is exact: msgpack is injective on what a JSON body parses to (dict order, int vs float, NaN and
infinities kept bit for bit; a value it cannot pack makes the call take the full path), and ``link_key``
is a function of the parsed message, so equal packed bytes mean equal link keys. A branch (an earlier
message edited, the tail dropped) simply matches a shorter remembered input or none; a retry matches
its own; after a restart the cache is empty and every call hashes everything, with the same result.

Hashes only: the cache holds link digests and keyed digests of packed messages, never message text.
It is memory-only (not in ``links.json``) and an erasure clears it.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections import Counter, OrderedDict
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, NamedTuple

import msgspec

from pipeline.proxy.linking.canonical import extend_chain

_PACK = msgspec.msgpack.Encoder().encode
_UNPACKABLE = (TypeError, ValueError, OverflowError, msgspec.EncodeError)
# What an entry costs in CPython (measured with tracemalloc, trajectory id shared with the linker): its
# objects, index and LRU slots, plus a 16-byte ``bytes`` and a tuple slot per link hash.
ENTRY_BYTES = 400
DIGEST_BYTES = 57


@dataclass(slots=True)
class ChainLookup:
    """A call's link chain (``chain[k]``: link hash of its first k messages) and the digest of all its
    packed messages (None: not packable, nothing to remember)."""

    chain: list[bytes]
    packed: bytes | None


class _Input(NamedTuple):  # a tuple of atoms: the garbage collector stops tracking it
    tenant: str
    count: int
    packed: bytes  # keyed digest of the packed messages[:count]
    chain: tuple[bytes, ...]  # count + 1 link hashes


class LinkChainCache:
    """Per trajectory: the link chain of its last step's input, found again by the packed digest."""

    def __init__(self, max_bytes: int = 64 << 20, hash_key: bytes = b"", min_messages: int = 8) -> None:
        self.max_bytes = max_bytes
        self.min_messages = max(1, min_messages)  # shorter inputs cost less to hash than to remember
        self._key = hash_key[:64]
        self._inputs: OrderedDict[tuple[str, str], _Input] = OrderedDict()
        self._index: dict[tuple[str, int, bytes], tuple[str, str]] = {}
        self._counts: dict[str, Counter[int]] = {}
        self._held = 0
        self.linked = 0  # messages link-hashed so far (what a hit saves is the rest)

    def __len__(self) -> int:
        return len(self._inputs)

    @property
    def held_bytes(self) -> int:
        """Estimated memory held (what ``max_bytes`` bounds)."""
        return self._held

    @staticmethod
    def _cost(links: int) -> int:
        return ENTRY_BYTES + DIGEST_BYTES * links

    def chain(self, tenant: str, messages: list[Any]) -> ChainLookup:
        """The call's link chain, reusing the longest remembered input it starts with.

        Raises ``ApiError`` (400) for a message that is not a valid chat message, as ``link_chain`` does.
        """
        parts = None
        if self.max_bytes and len(messages) >= self.min_messages:  # a shorter call matches nothing held
            with contextlib.suppress(*_UNPACKABLE):  # not packable: hashed whole, not kept
                parts = list(map(_PACK, messages))
        if parts is None:
            self.linked += len(messages)
            return ChainLookup(extend_chain([b""], messages, 0), None)
        ends = list(accumulate(map(len, parts)))
        view = memoryview(b"".join(parts))
        h = hashlib.blake2b(digest_size=16, key=self._key)
        pos, hit, hit_key = 0, None, None
        counts = self._counts.get(tenant)
        for count in sorted(c for c in counts if c <= len(parts)) if counts else ():
            h.update(view[pos : ends[count - 1]])
            pos = ends[count - 1]
            held = self._index.get((tenant, count, h.digest()))
            if held is not None:
                hit, hit_key = self._inputs[held], held
        h.update(view[pos:])
        start = hit.count if hit is not None else 0
        chain = list(hit.chain) if hit is not None else [b""]
        if hit_key is not None:
            self._inputs.move_to_end(hit_key)
        self.linked += len(messages) - start
        return ChainLookup(extend_chain(chain, messages, start), h.digest())

    def remember(self, tenant: str, trajectory_id: str, chain: list[bytes], packed: bytes | None) -> None:
        """``chain`` (of a call whose packed digest is ``packed``) is now the trajectory's last input."""
        key = (tenant, trajectory_id)
        self._drop(key)
        count = len(chain) - 1
        cost = self._cost(len(chain))
        if packed is None or count == 0 or cost > self.max_bytes:
            return
        self._inputs[key] = _Input(tenant, count, packed, tuple(chain))
        self._index[(tenant, count, packed)] = key
        self._counts.setdefault(tenant, Counter())[count] += 1
        self._held += cost
        while self._held > self.max_bytes:
            self._drop(next(iter(self._inputs)))

    def clear(self) -> None:
        """Forget everything (an erasure: the next call of each trajectory hashes its whole history)."""
        self._inputs.clear()
        self._index.clear()
        self._counts.clear()
        self._held = 0

    def _drop(self, key: tuple[str, str]) -> None:
        old = self._inputs.pop(key, None)
        if old is None:
            return
        self._held -= self._cost(len(old.chain))
        ikey = (old.tenant, old.count, old.packed)
        if self._index.get(ikey) == key:
            del self._index[ikey]
        counts = self._counts[old.tenant]
        counts[old.count] -= 1
        if counts[old.count] <= 0:
            del counts[old.count]
            if not counts:
                del self._counts[old.tenant]
