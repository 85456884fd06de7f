"""What the stages remember of erasures, and the check every record passes before it is kept.

Two kinds of memory, both bounded by ``rewards.keep_erased_s`` and both without content:

- an erased trajectory's marker in the ``join_state`` table (``JoinState.erased_marker``): its id and
  owner only. Any event of that id (a late reward, a re-delivered record, a replay) is dropped.
- the criterion of a tenant or subject erasure in the ``erasure_rules`` table (one copy per partition,
  keyed by erasure id; a subject id only as its SHA-256): events of that tenant or naming that subject
  *created before the request* are dropped, so traffic still in flight on the raw or redacted topic when
  the erasure ran never lands. Traffic created after the request is new data and flows as usual.

Dropped events are counted (``erased_dropped``), never dead-lettered: a dead letter would carry the
content the erasure removed.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from pipeline.stages.storage import Table, decode_state, held_state, is_erased_value
from sluice.events import ErasureEvent, ErasureScope, RewardEvent, StepEvent, TrajectoryEndEvent
from sluice.frozen import Frozen

RULES_REFRESH_S = 5.0  # another worker may have stored rules for a partition this one took over


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


class ErasureRule(Frozen):
    """A tenant/subject erasure as the stages keep it: the subject id only as its digest."""

    erasure_id: str
    scope: ErasureScope
    target_digest: str
    tenant_scope: str | None = None
    requested_at: datetime

    @classmethod
    def of(cls, event: ErasureEvent) -> ErasureRule:
        return cls(
            erasure_id=event.erasure_id,
            scope=event.scope,
            target_digest=_digest(event.target),
            tenant_scope=event.tenant_scope,
            requested_at=event.requested_at,
        )

    def covers(self, event: StepEvent | TrajectoryEndEvent | RewardEvent, subjects: list[str]) -> bool:
        if event.created_at > self.requested_at:
            return False  # new data after the request
        if self.tenant_scope is not None and event.tenant != self.tenant_scope:
            return False
        if self.scope == "tenant":
            return _digest(event.tenant) == self.target_digest
        return any(_digest(s) == self.target_digest for s in subjects)


@dataclass(eq=False)
class ErasureGuard:
    """The erased markers in ``states`` and the rules in ``rules``, each kept ``keep_s`` by ``clock``."""

    states: Table
    rules: Table
    keep_s: float
    clock: Callable[[], float] = time.time
    _cache: dict[str, ErasureRule] = field(default_factory=dict, init=False, repr=False)
    _loaded_at: float | None = field(default=None, init=False, repr=False)

    # ------------------------------------------------------------------ rules

    def remember_rule(self, event: ErasureEvent) -> None:
        """Store a tenant/subject criterion on the current record's partition; forget expired ones."""
        cutoff = self.clock() - self.keep_s
        expired = [
            key
            for key, value in list(self.rules.items())
            if ErasureRule.model_validate_json(value).requested_at.timestamp() < cutoff
        ]
        for key in expired:
            del self.rules[key]
        rule = ErasureRule.of(event)
        self.rules[event.erasure_id.encode()] = rule.model_dump_json().encode()
        self._cache[event.erasure_id] = rule

    def _active_rules(self) -> list[ErasureRule]:
        now = self.clock()
        if self._loaded_at is None or now - self._loaded_at > RULES_REFRESH_S:
            fresh: dict[str, ErasureRule] = {}
            for value in self.rules.values():
                rule = ErasureRule.model_validate_json(value)
                fresh[rule.erasure_id] = rule
            self._cache, self._loaded_at = fresh, now
        cutoff = now - self.keep_s
        return [r for r in self._cache.values() if r.requested_at.timestamp() >= cutoff]

    # ------------------------------------------------------------------ the check

    def covers(self, event: StepEvent | TrajectoryEndEvent | RewardEvent) -> bool:
        """Whether the event belongs to erased data and must be dropped. Cheap on the common path: the
        state held decoded, or one table read and a byte search; the state is parsed only while a
        tenant/subject rule is active."""
        state = held_state(self.states, event.trajectory_id)
        value = None if state is not None else self.states.get(event.trajectory_id.encode())
        if (state is not None and state.erased) or (value is not None and is_erased_value(value)):
            return True
        rules = self._active_rules()
        if not rules:
            return False
        subjects = [] if isinstance(event, RewardEvent) else event.governance.subject_ids
        if state is None and value is not None:
            state = decode_state(value)
        if state is not None:
            subjects = [*subjects, *state.facts.subject_ids]
        return any(r.covers(event, subjects) for r in rules)
