"""What the stages remember of erasures, and the check every record passes before it is kept.

Two kinds of memory, both bounded by ``rewards.keep_erased_s`` and both without content:

- an erased trajectory's marker in the ``join_state`` table (``JoinState.erased_marker``): its id and
  owner only. Any event of that id (a late reward, a re-delivered record, a replay) is dropped.
- the criterion of a tenant or subject erasure in the ``erasure_rules`` table (one copy per partition,
  keyed by erasure id): events of that tenant or naming that subject *created before the request* are
  dropped, so traffic still in flight on the raw or redacted topic when the erasure ran never lands.
  Traffic created after the request is new data and flows as usual.

Dropped events are counted (``erased_dropped``), never dead-lettered: a dead letter would carry the
content the erasure removed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from pipeline.stages.storage import Table, load_state
from sluice.events import ErasureEvent, RewardEvent, StepEvent, TrajectoryEndEvent

RULES_REFRESH_S = 5.0  # another worker may have stored rules for a partition this one took over


class ErasureGuard:
    def __init__(
        self,
        states: Table,
        rules: Table,
        keep_s: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.states = states
        self.rules = rules
        self.keep_s = keep_s
        self.clock = clock
        self._cache: dict[str, ErasureEvent] = {}
        self._loaded_at: float | None = None

    # ------------------------------------------------------------------ rules

    def remember_rule(self, event: ErasureEvent) -> None:
        """Store a tenant/subject criterion on the current record's partition; forget expired ones."""
        cutoff = self.clock() - self.keep_s
        expired = [
            key
            for key, value in list(self.rules.items())
            if ErasureEvent.model_validate_json(value).requested_at.timestamp() < cutoff
        ]
        for key in expired:
            del self.rules[key]
        self.rules[event.erasure_id.encode()] = event.model_dump_json().encode()
        self._cache[event.erasure_id] = event

    def _active_rules(self) -> list[ErasureEvent]:
        now = self.clock()
        if self._loaded_at is None or now - self._loaded_at > RULES_REFRESH_S:
            fresh: dict[str, ErasureEvent] = {}
            for value in self.rules.values():
                rule = ErasureEvent.model_validate_json(value)
                fresh[rule.erasure_id] = rule
            self._cache, self._loaded_at = fresh, now
        cutoff = now - self.keep_s
        return [r for r in self._cache.values() if r.requested_at.timestamp() >= cutoff]

    # ------------------------------------------------------------------ the check

    def covers(self, event: StepEvent | TrajectoryEndEvent | RewardEvent) -> bool:
        """Whether the event belongs to erased data and must be dropped."""
        state = load_state(self.states, event.trajectory_id)
        if state is not None and state.erased:
            return True
        rules = self._active_rules()
        if not rules:
            return False
        subjects = [] if isinstance(event, RewardEvent) else event.governance.subject_ids
        if state is not None:
            subjects = [*subjects, *state.facts.subject_ids]
        return any(
            event.created_at <= r.requested_at and r.matches(event.trajectory_id, event.tenant, subjects)
            for r in rules
        )
