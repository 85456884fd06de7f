"""Model licence: output of a model whose licence forbids training (``blocked_models`` globs), or of an
unknown model, is kept for audit only."""

from __future__ import annotations

import fnmatch
from datetime import datetime

from governance.config import EligibilityPolicy
from governance.eligibility.base import EligibilityRule, Finding, finding
from governance.eligibility.facts import TrajectoryFacts


class ModelLicenceRule(EligibilityRule):
    name = "model_licence"

    def check(self, facts: TrajectoryFacts, policy: EligibilityPolicy, now: datetime) -> list[Finding]:
        out: list[Finding] = []
        blocked = [
            m for m in facts.models if any(fnmatch.fnmatchcase(m, pat) for pat in policy.blocked_models)
        ]
        if blocked:
            out.append(finding("audit_only", "model_blocked:" + ",".join(blocked)))
        if facts.unknown_model_steps:
            out.append(finding("audit_only", f"model_unknown:{facts.unknown_model_steps}"))
        if not out:
            out.append(finding("train", "models_allowed:" + ",".join(facts.models)))
        return out
