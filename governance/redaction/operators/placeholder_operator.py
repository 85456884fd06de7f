"""Stable per-trajectory placeholders: the first distinct email is ``<EMAIL_ADDRESS_1>`` in every step.

Departs from Presidio's ``replace`` operator (one fixed string per type) so that a trajectory keeps its
co-reference structure: the model still sees that two turns talk about the same person. The number is
looked up by a keyed digest of the normalised value in the trajectory's ``PlaceholderState``.
"""

from __future__ import annotations

from governance.redaction.operators.base import STATE_PURPOSE, Operator, OperatorContext


class PlaceholderOperator(Operator):
    name = "placeholder"

    def apply(self, value: str, entity_type: str, ctx: OperatorContext) -> str:
        digest = ctx.hasher.digest(STATE_PURPOSE, entity_type, ctx.normalised(entity_type, value))
        return f"<{entity_type}_{ctx.state.number_for(entity_type, digest)}>"
