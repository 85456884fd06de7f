"""Keep: the value stays in the text. Used for types one wants counted but not removed.

Every kept finding adds to ``RedactionReport.residual``, which the eligibility stage compares with
``EligibilityPolicy.max_residual_pii``.
"""

from __future__ import annotations

from governance.redaction.operators.base import Operator, OperatorContext


class KeepOperator(Operator):
    name = "keep"

    def apply(self, value: str, entity_type: str, ctx: OperatorContext) -> None:
        return None
