"""Mask: letters and digits become the mask character except the last few; separators stay.

``4111 1111 1111 1111`` -> ``**** **** **** 1111``. A value with no more than twice ``keep_last``
letters/digits is masked entirely, so a short value is never kept whole.
"""

from __future__ import annotations

from governance.redaction.operators.base import Operator, OperatorContext


class MaskOperator(Operator):
    name = "mask"

    def __init__(self, mask_char: str = "*", keep_last: int = 4) -> None:
        self.mask_char = mask_char
        self.keep_last = keep_last

    def apply(self, value: str, entity_type: str, ctx: OperatorContext) -> str:
        alnum = sum(ch.isalnum() for ch in value)
        keep = self.keep_last if alnum > 2 * self.keep_last else 0
        out = []
        seen = 0
        for ch in value:
            if ch.isalnum():
                seen += 1
                out.append(ch if seen > alnum - keep else self.mask_char)
            else:
                out.append(ch)
        return "".join(out)
