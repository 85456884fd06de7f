"""Placeholder state: stable across steps and JSON round trips, never holding raw values."""

from __future__ import annotations

import json

from governance.redaction import PlaceholderState, Redactor


def test_stable_across_steps_and_round_trips(plain: Redactor) -> None:
    _, s1, _ = plain.redact_text("I am alice@example.com")
    s1 = PlaceholderState.model_validate(json.loads(json.dumps(s1.model_dump(mode="json"))))
    out2, s2, _ = plain.redact_text("cc bob@example.com and alice@example.com", s1)
    s2 = PlaceholderState.model_validate_json(s2.model_dump_json())
    out3, _, _ = plain.redact_text("bob@example.com replied", s2)
    assert out2 == "cc <EMAIL_ADDRESS_2> and <EMAIL_ADDRESS_1>"
    assert out3 == "<EMAIL_ADDRESS_2> replied"


def test_trajectories_are_independent(plain: Redactor) -> None:
    _, s, _ = plain.redact_text("x@example.com y@example.com")
    out_other, _, _ = plain.redact_text("y@example.com", None)
    out_same, _, _ = plain.redact_text("y@example.com", s)
    assert out_other == "<EMAIL_ADDRESS_1>" and out_same == "<EMAIL_ADDRESS_2>"


def test_input_state_is_not_mutated(plain: Redactor) -> None:
    _, s, _ = plain.redact_text("x@example.com")
    before = s.model_dump(mode="json")
    _, s2, _ = plain.redact_text("new@example.com", s)
    assert s.model_dump(mode="json") == before and s2.size == 2


def test_state_holds_no_raw_values(plain: Redactor) -> None:
    values = ["alice@example.com", "+44 20 7946 0958", "203.0.113.9", "536-22-8761", "AKIAIOSFODNN7EXAMPLE"]
    _, s, counts = plain.redact_text(" ; ".join(values))
    assert sum(counts.values()) == len(values)
    dumped = s.model_dump_json()
    for v in [*values, "alice", "7946", "442079460958", "536228761"]:
        assert v not in dumped
    for digests in s.assigned.values():
        assert all(len(d) == 32 and int(d, 16) >= 0 for d in digests)


def test_state_digests_depend_on_the_key(redactor_factory) -> None:
    a = redactor_factory(hash_key="one")
    b = redactor_factory(hash_key="two")
    _, sa, _ = a.redact_text("alice@example.com")
    _, sb, _ = b.redact_text("alice@example.com")
    assert sa.assigned["EMAIL_ADDRESS"].keys() != sb.assigned["EMAIL_ADDRESS"].keys()
