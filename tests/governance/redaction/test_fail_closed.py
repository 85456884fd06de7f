"""Fail closed: an event whose redaction fails or times out is withheld whole and never trained on."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from governance.eligibility import TrajectoryFacts
from governance.redaction import Redactor
from governance.redaction.exceptions import RedactionTimeout
from tests.governance.event_builders import step


def test_timeout_raises_and_withhold_removes_every_text(redactor_factory: Callable[..., Redactor]) -> None:
    slow = redactor_factory(hash_key="k", step_timeout_s=1e-9)
    event = step("t-1", 0, text="mail me at canary.alice@example.com, card 4111 1111 1111 1111")
    with pytest.raises(RedactionTimeout):
        slow.redact_event(event)
    withheld = slow.withhold(event, "timeout")
    dumped = withheld.model_dump_json()
    assert "canary.alice" not in dumped and "4111" not in dumped
    assert withheld.governance.redaction == "redacted"
    assert withheld.governance.redaction_report.failure == "timeout"
    assert (withheld.trajectory_id, withheld.step_index) == ("t-1", 0)
    assert all(c.token_ids is None for c in withheld.action.choices)
    facts = TrajectoryFacts().add_step(withheld)
    assert facts.redaction_failures == ["timeout"]
