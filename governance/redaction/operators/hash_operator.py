"""Keyed hash: ``<EMAIL_ADDRESS:9f86d081884c7d65>``, HMAC-SHA256 of the normalised value.

Departs from Presidio's ``hash`` operator, which salts randomly per entity unless given a salt: this one
is stable across steps, trajectories and processes (joins on the hash still work) and cannot be reversed
by hashing candidate values without ``RedactionConfig.hash_key``.
"""

from __future__ import annotations

from governance.redaction.operators.base import HASH_PURPOSE, Operator, OperatorContext


class HashOperator(Operator):
    name = "hash"

    def __init__(self, length: int = 16) -> None:
        self.length = length

    def apply(self, value: str, entity_type: str, ctx: OperatorContext) -> str:
        digest = ctx.hasher.digest(HASH_PURPOSE, entity_type, ctx.normalised(entity_type, value), self.length)
        return f"<{entity_type}:{digest}>"
