"""Applies operators to the findings of one text, right to left, under the trajectory's state.

Runs on every text, cached or not: the analyzer's cache stores spans, and the placeholder numbers
come from the trajectory's ``PlaceholderState``, so a cache hit in trajectory B never reuses
trajectory A's numbering.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from governance.redaction.analysis_cache import Finding
from governance.redaction.operators import OperatorContext, OperatorTable


@dataclass
class TextOutcome:
    text: str
    redacted: Counter[str] = field(default_factory=Counter)
    residual: int = 0


def apply_operators(
    text: str,
    findings: tuple[Finding, ...],
    operators: OperatorTable,
    ctx: OperatorContext,
    threshold: float,
) -> TextOutcome:
    """Replace each finding at or above ``threshold``; count the rest (and 'keep' ones) as residual."""
    out = TextOutcome(text)
    if not findings:
        return out
    # Findings are sorted and disjoint: number placeholders in reading order, splice in one pass.
    replacements: list[tuple[int, int, str]] = []
    for f in findings:
        if f.score < threshold:
            out.residual += 1
            continue
        new = operators.for_entity(f.entity_type).apply(text[f.start : f.end], f.entity_type, ctx)
        if new is None:
            out.residual += 1
            continue
        out.redacted[f.entity_type] += 1
        replacements.append((f.start, f.end, new))
    if replacements:
        parts: list[str] = []
        pos = 0
        for start, end, new in replacements:
            parts.append(text[pos:start])
            parts.append(new)
            pos = end
        parts.append(text[pos:])
        out.text = "".join(parts)
    return out
