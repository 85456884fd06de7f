"""Pure rendering helpers of the console: redaction markers highlighted, messages flattened, the learning
curve as an inline SVG (no chart library, no build step)."""

from __future__ import annotations

import json
import re
from typing import Any

from markupsafe import Markup, escape

# What the redaction operators leave: <EMAIL_ADDRESS_1> (placeholder), <REDACTED> (drop),
# <US_SSN:1a2b3c> (hash), **** **** **** 1111 (mask: four or more mask characters, separators kept).
REDACTION_MARK = re.compile(r"<[A-Z][A-Z0-9_]*(?::[0-9a-f]+)?>|\*{4,}(?:[ -]?\*+)*(?:[ -]?\d{1,4})?")


def highlight_redactions(text: str | None) -> Markup:
    """Escaped text with every redaction marker in ``<mark class="redacted">``."""
    if not text:
        return Markup("")
    out, last = [], 0
    for m in REDACTION_MARK.finditer(text):
        out.append(escape(text[last : m.start()]))
        out.append(Markup('<mark class="redacted" title="redacted">{}</mark>').format(m.group(0)))
        last = m.end()
    out.append(escape(text[last:]))
    return Markup("").join(out)


def message_text(message: dict[str, Any]) -> str:
    """A message's content as text: strings as they are, parts joined, tool calls as name(arguments)."""
    content = message.get("content")
    if isinstance(content, list):
        text = "\n".join(str(p.get("text", p.get("content", ""))) for p in content if isinstance(p, dict))
    else:
        text = "" if content is None else str(content)
    calls = [
        f"→ {c.get('name') or c.get('function', {}).get('name')}({c.get('arguments') or c.get('function', {}).get('arguments', '')})"
        for c in message.get("tool_calls") or []
    ]
    text = re.sub(r"\n\s*\n+", "\n", text).strip()  # runs of blank lines add nothing to read
    return "\n".join(x for x in [text, *calls] if x)


def parse_messages(raw: str | None) -> list[dict[str, Any]]:
    if not raw:
        return []
    value = json.loads(raw)
    return value if isinstance(value, list) else [value]


def learning_svg(points: list[tuple[str, float | None]], width: int = 640, height: int = 220) -> Markup:
    """Mean reward per policy version, in serving order, as a line with labelled dots."""
    pts = [(label, v) for label, v in points if v is not None]
    if not pts:
        return Markup('<p class="muted">No rewarded trajectories with a policy version yet.</p>')
    lo, hi = min(0.0, min(v for _, v in pts)), max(1.0, max(v for _, v in pts))
    pad, n = 40, len(pts)

    def xy(i: int, v: float) -> tuple[float, float]:
        x = pad + (width - 2 * pad) * (i / (n - 1) if n > 1 else 0.5)
        y = height - pad - (height - 2 * pad) * ((v - lo) / (hi - lo))
        return round(x, 1), round(y, 1)

    coords = [xy(i, v) for i, (_, v) in enumerate(pts)]
    parts = [
        f'<svg class="curve" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        'aria-label="mean reward by policy version">',
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" class="axis"/>',
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" class="axis"/>',
        f'<text x="4" y="{pad + 4}" class="tick">{hi:g}</text>',
        f'<text x="4" y="{height - pad + 4}" class="tick">{lo:g}</text>',
        '<polyline class="line" points="' + " ".join(f"{x},{y}" for x, y in coords) + '"/>',
    ]
    for (label, v), (x, y) in zip(pts, coords, strict=True):
        parts.append(
            Markup('<circle cx="{}" cy="{}" r="4" class="dot"><title>{}: {}</title></circle>').format(
                x, y, label, f"{v:.3f}"
            )
        )
        parts.append(
            Markup('<text x="{}" y="{}" class="label">{}</text>').format(x, height - pad + 16, label)
        )
    parts.append("</svg>")
    return Markup("").join(Markup(p) if isinstance(p, str) else p for p in parts)


def pretty_json(raw: str | None) -> str:
    """A stored JSON document indented for reading ("" when empty)."""
    if not raw:
        return ""
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    return "" if value in ({}, [], None) else json.dumps(value, indent=2, sort_keys=True, default=str)
