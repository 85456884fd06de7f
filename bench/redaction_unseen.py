"""Leak and false-placeholder scoring on the independent set (``bench/data/unseen_eval_set.py``).

Every trajectory goes through ``Redactor.redact_event`` step by step, as the redact stage runs it
(placeholder state carried along). A planted value leaks when any of its check strings survives in
any text of the redacted trajectory (JSON texts are also searched decoded, so ``\\u00e4`` escapes
and ``\\n`` in a PEM block do not hide a survivor); for card, phone, SSN and IBAN values the digits
alone are also searched in the digits of the output, so a half-redacted number counts as leaked.
On clean trajectories every redaction the reports count is a false placeholder.

Stock Presidio is scored the same way: ``AnalyzerEngine`` + ``AnonymizerEngine`` on each text as sent.

    python -m bench.redaction          # runs this as part of the benchmark
"""

from __future__ import annotations

import contextlib
import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from typing import Any

from bench.data.unseen_eval_set import UnseenTrajectory, as_steps
from governance.redaction import Redactor

DIGIT_KINDS = frozenset({"CREDIT_CARD", "PHONE_NUMBER", "US_SSN", "IBAN_CODE"})
_NON_DIGIT = re.compile(r"\D+")


def _strings(obj: Any) -> Iterator[str]:
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)
    elif isinstance(obj, str):
        yield obj
        if obj[:1] in "[{":
            with contextlib.suppress(ValueError):
                yield json.dumps(json.loads(obj), ensure_ascii=False)


def _leaked(kind: str, checks: list[str], haystack: str, digits: str) -> bool:
    if any(c in haystack for c in checks):
        return True
    if kind in DIGIT_KINDS:
        d = _NON_DIGIT.sub("", checks[0])
        return len(d) >= 7 and d in digits
    if kind == "PERSON":  # the family name as a word, anywhere in the output
        return any(re.search(rf"(?<!\w){re.escape(c)}(?!\w)", haystack) for c in checks)
    return False


class UnseenScore:
    """Accumulates leaks per kind and variant, and false placeholders per clean trajectory."""

    def __init__(self) -> None:
        self.support: Counter[str] = Counter()
        self.leaks: Counter[str] = Counter()
        self.variant_leaks: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        self.clean_trajectories = 0
        self.false_placeholders: Counter[str] = Counter()
        self.leak_examples: dict[str, list[str]] = defaultdict(list)

    def add(self, traj: UnseenTrajectory, output_texts: list[str], redacted: Counter[str]) -> None:
        if traj.clean:
            self.clean_trajectories += 1
            self.false_placeholders.update(redacted)
            return
        haystack = "\n".join(output_texts)
        digits = _NON_DIGIT.sub("", haystack)
        for turn in traj.turns:
            for p in turn.planted:
                leak = _leaked(p.kind, p.checks, haystack, digits)
                self.support[p.kind] += 1
                self.leaks[p.kind] += leak
                v = self.variant_leaks[f"{p.kind}/{p.variant.split(':')[0]}"]
                v[0] += leak
                v[1] += 1
                if leak and len(self.leak_examples[p.kind]) < 3:
                    self.leak_examples[p.kind].append(turn.text[:200])

    def leak_rate(self, kind: str) -> float:
        return round(self.leaks[kind] / self.support[kind], 4) if self.support[kind] else 0.0

    def summary(self) -> dict[str, Any]:
        structured = {k: self.leak_rate(k) for k in sorted(self.support) if k != "PERSON"}
        fp = sum(self.false_placeholders.values())
        return {
            "leak_per_type": structured,
            "recall_per_type": {k: round(1 - r, 4) for k, r in structured.items()},
            "structured_leak_max": max(structured.values()),
            "structured_leak_max_type": max(structured, key=structured.get),
            "person_leak": self.leak_rate("PERSON"),
            "clean_false_placeholders": fp,
            "clean_false_placeholders_per_20": round(20 * fp / max(1, self.clean_trajectories), 3),
            "clean_false_placeholder_types": dict(self.false_placeholders),
            "variant_leak": {v: round(a / n, 3) for v, (a, n) in sorted(self.variant_leaks.items()) if a},
        }


def score_sluice(trajs: list[UnseenTrajectory], redactor: Redactor) -> UnseenScore:
    score = UnseenScore()
    for traj in trajs:
        state = None
        texts: list[str] = []
        redacted: Counter[str] = Counter()
        for step in as_steps(traj):
            out, state = redactor.redact_event(step, state)
            texts += _strings(out.model_dump(mode="json"))
            redacted.update(out.governance.redaction_report.entities)
        score.add(traj, texts, redacted)
    return score


def score_texts(
    trajs: list[UnseenTrajectory], redact: Callable[[str], tuple[str, Counter[str]]]
) -> UnseenScore:
    """Any text-in, text-out redactor (stock Presidio) applied to each turn as sent."""
    score = UnseenScore()
    for traj in trajs:
        texts: list[str] = []
        redacted: Counter[str] = Counter()
        for turn in traj.turns:
            out, counts = redact(turn.text)
            texts += _strings(out)
            redacted.update(counts)
        score.add(traj, texts, redacted)
    return score
