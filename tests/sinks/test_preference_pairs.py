"""The preference-pair rule on its own: verdicts, contexts, tenants (pure functions, no store)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sinks.export.preference import Feedback, judged_answers, preference_pairs
from sluice.events import FeedbackSignal
from testing.samples import make_trajectory

T0 = datetime(2026, 11, 2, tzinfo=UTC)


def _judged(tid: str, answer: str, kinds: list[str], tenant: str = "acme", carried: bool = False) -> list:
    t = make_trajectory(tid, tenant=tenant, n_steps=1)
    t.steps[0].action.choices[0].message.content = answer
    signals = [Feedback(k, 0, T0 + timedelta(minutes=i)) for i, k in enumerate(kinds)]
    if carried:  # the step's own action_result.feedback counts the same as the store's rows
        t.steps[0].action_result.feedback = [FeedbackSignal(kind=f.kind, at=f.at) for f in signals]
        signals = []
    return judged_answers(t, t.steps, signals)


def test_latest_signal_decides_and_unrelated_signals_do_not() -> None:
    (a,) = _judged("t1", "x", ["accept", "retry"])
    assert not a.accepted and a.verdict == "retry"
    (b,) = _judged("t2", "y", ["delete", "thumbs_up"], carried=True)
    assert b.accepted and b.verdict == "thumbs_up"
    assert _judged("t3", "z", []) == []
    assert _judged("t4", "", ["retry"]) == []  # nothing to compare


def test_pairs_need_the_same_context_and_tenant_and_different_answers() -> None:
    rejected = _judged("t1", "wrong", ["retry"])
    accepted = _judged("t2", "right", ["accept"])
    same_text = _judged("t3", "wrong", ["accept"])
    other_tenant = _judged("t4", "right too", ["accept"], tenant="globex")
    rows = preference_pairs(rejected + accepted + same_text + other_tenant)
    assert [(r["trajectory_id"], r["chosen_trajectory_id"]) for r in rows] == [("t1", "t2")]
    assert rows[0]["chosen"][0]["content"] == "right" and rows[0]["rejected"][0]["content"] == "wrong"
    longer = make_trajectory("t5", n_steps=2)  # step 1 saw more context than step 0 of t1
    assert (
        preference_pairs(rejected + judged_answers(longer, longer.steps, [Feedback("accept", 1, T0)])) == []
    )
