"""Keyed digests of token-id sequences: how the linker finds a step's token prefix without keeping ids.

A sequence is kept as a chain of 8-byte keyed BLAKE2b digests, one per ``TOKEN_BLOCK`` tokens (each over
the previous digest and the block), plus one digest over the whole sequence (``tail``). Two sequences
share their first k blocks exactly when their first k digests match; the whole-sequence digest makes the
usual append-only case exact. Without the key a digest reveals nothing checkable about the tokens.
"""

from __future__ import annotations

import hashlib
from array import array

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
