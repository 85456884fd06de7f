"""Drop: the value is removed and a fixed marker (``<REDACTED>`` by default) is left in its place.

A marker rather than the empty string, so the text still reads as having held something (``key=<REDACTED>``
instead of ``key=``) and nobody mistakes a dropped secret for an empty one. The type is not written: the
step's redaction report has the counts per type.
"""

from __future__ import annotations

from governance.redaction.operators.base import Operator, OperatorContext


class DropOperator(Operator):
    name = "drop"

    def __init__(self, marker: str = "<REDACTED>") -> None:
        self.marker = marker

    def apply(self, value: str, entity_type: str, ctx: OperatorContext) -> str:
        return self.marker
