"""``updated`` gives what ``model_copy(update=...)`` gives: values, fields set, and an untouched original."""

from __future__ import annotations

from governance.eligibility import TrajectoryFacts
from governance.reward_join.state import JoinState
from sluice.events import Message
from sluice.model_update import updated
from tests.governance.event_builders import step


def _same(a, b) -> None:
    assert type(a) is type(b)
    assert a == b
    assert a.__dict__ == b.__dict__
    assert a.model_fields_set == b.model_fields_set
    assert a.model_dump_json() == b.model_dump_json()


def test_a_closed_model_copied_with_changes_as_model_copy_copies_it() -> None:
    state = JoinState.new("acme~t", "acme", 1.0)
    changes = {"dirty": True, "step_ids": ["e1"], "tenant_confirmed": True}
    new = updated(state, changes)
    _same(new, state.model_copy(update=changes))
    assert state.step_ids == [] and not state.dirty  # the original is left as it was
    new.step_ids.append("e2")  # shallow like model_copy: a changed field is the value given
    assert changes["step_ids"] == ["e1", "e2"]


def test_a_frozen_model_and_a_nested_one() -> None:
    facts = TrajectoryFacts()
    _same(updated(facts, {"step_count": 3}), facts.model_copy(update={"step_count": 3}))
    s = step(index=2)
    result = updated(s.action_result, {"tool_results": []})
    _same(updated(s, {"action_result": result}), s.model_copy(update={"action_result": result}))


def test_a_model_with_extra_fields_goes_through_model_copy() -> None:
    message = Message(role="user", content="hi", reasoning_content="x")
    _same(updated(message, {"content": "there"}), message.model_copy(update={"content": "there"}))
    _same(updated(message, {"other": 1}), message.model_copy(update={"other": 1}))
