"""Missing facts as memory entries, taken from what the scope already knows (no model).

Two sources, in order: a critique an operator attached to the cluster's failed trajectories (the most
common one: it says what the agent should have known), else the sentence that the scope's successful
trajectories share (in their final answers or in their tools' results) and no failed one contains,
e.g. "The promo code is SPRING24." in the two runs that got it right. Nothing found: no proposal.
"""

from __future__ import annotations

import re
from collections import Counter

from pipeline.evolve.proposers.base import ProposerContext, draft_proposal
from sluice.evolution import FailureCluster, MemoryEntry, Proposal, Surface

_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
_MIN_WORDS = 3


def sentences(text: str | None) -> list[str]:
    """The sentences of a text with at least three words, whitespace-normalised."""
    out = []
    for m in _SENTENCE.finditer(text or ""):
        s = " ".join(m.group(0).split())
        if len(s.split()) >= _MIN_WORDS:
            out.append(s)
    return out


class MissingFactProposer:
    name = "missing_fact"
    surfaces: frozenset[Surface] = frozenset({"memory"})

    def propose(self, cluster: FailureCluster, context: ProposerContext) -> Proposal | None:
        rows = context.in_scope(cluster)
        failed_ids = {r.trajectory_id for r in rows if not context.succeeded(r)}
        critiques = Counter(
            " ".join(c.split()) for r in rows if r.trajectory_id in failed_ids for c in r.critiques
        )
        if critiques:
            text, n = critiques.most_common(1)[0]
            rationale = f"an operator's critique on {n} failed trajectories of the scope says so"
            return self._draft(cluster, context, text, rationale)
        tool_text: dict[str, list[str]] = {}
        for c in context.rows.tool_calls:
            if not c.failed:
                tool_text.setdefault(c.trajectory_id, []).append(c.result or "")
        seen_ok: Counter[str] = Counter()
        seen_failed: Counter[str] = Counter()
        for r in rows:
            texts = [r.final_answer or "", *tool_text.get(r.trajectory_id, [])]
            found = {s for t in texts for s in sentences(t)}
            (seen_failed if r.trajectory_id in failed_ids else seen_ok).update(found)
        shared = [(n, s) for s, n in seen_ok.items() if not seen_failed[s]]
        if not shared:
            context.note(
                self.name, cluster, "no critique, and no sentence that only successful trajectories share"
            )
            return None
        n, text = max(shared)
        question = next((r.question for r in rows if r.question), None)
        if question:
            text = f"For questions like “{question}”: {text}"
        rationale = (
            f"{n} successful trajectories of the scope state it and none of the {len(failed_ids)} failed "
            "ones does"
        )
        return self._draft(cluster, context, text, rationale)

    def _draft(
        self, cluster: FailureCluster, context: ProposerContext, text: str, rationale: str
    ) -> Proposal:
        entry = MemoryEntry(text=text[:4000])
        return draft_proposal(context, cluster, self.name, "memory", rationale, memory=[entry])
