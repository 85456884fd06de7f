"""Each operator, the per-type/family resolution, and residual counting."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable

from governance.redaction import PlaceholderState, Redactor
from governance.redaction.keyed_hash import KeyedHasher
from governance.redaction.operators import OperatorContext
from governance.redaction.operators.mask_operator import MaskOperator


def test_placeholder_numbers_distinct_values(plain: Redactor) -> None:
    out, _, counts = plain.redact_text("a@example.com, b@example.com, then A@Example.com again")
    assert out == "<EMAIL_ADDRESS_1>, <EMAIL_ADDRESS_2>, then <EMAIL_ADDRESS_1> again"
    assert counts == {"EMAIL_ADDRESS": 3}


def test_phone_written_two_ways_is_one_placeholder(plain: Redactor) -> None:
    out, _, _ = plain.redact_text("call (415) 867-5309 or +1 415 867 5309")
    assert out == "call <PHONE_NUMBER_1> or <PHONE_NUMBER_1>"


def test_mask_keeps_last_four_and_separators(redactor: Redactor) -> None:
    out, _, counts = redactor.redact_text("card 4111 1111 1111 1111 ok")
    assert out == "card **** **** **** 1111 ok" and counts == {"CREDIT_CARD": 1}


def test_mask_hides_short_values_entirely() -> None:
    ctx = OperatorContext(PlaceholderState(), KeyedHasher(b"k"))
    assert MaskOperator("#", 4).apply("12345678", "X", ctx) == "########"
    assert MaskOperator("#", 4).apply("123456789", "X", ctx) == "#####6789"


def test_hash_is_keyed_and_stable(redactor_factory: Callable[..., Redactor]) -> None:
    a = redactor_factory(default_operator="hash", hash_key="key-a")
    b = redactor_factory(default_operator="hash", hash_key="key-b")
    out1, _, _ = a.redact_text("mail bob@example.com")
    out2, _, _ = a.redact_text("mail BOB@example.com", PlaceholderState())
    out3, _, _ = b.redact_text("mail bob@example.com")
    assert out1 == out2 and out1 != out3
    assert out1.startswith("mail <EMAIL_ADDRESS:") and "bob" not in out1
    digest = out1.removeprefix("mail <EMAIL_ADDRESS:").removesuffix(">")
    unkeyed = hashlib.sha256(b"bob@example.com").hexdigest()
    assert len(digest) == 16 and digest not in unkeyed
    expected = hmac.new(
        b"key-a", b"hash-operator\x1fEMAIL_ADDRESS\x1fbob@example.com", hashlib.sha256
    ).hexdigest()
    assert digest == expected[:16]


def test_drop_leaves_marker_for_secret_family(redactor: Redactor) -> None:
    out, _, counts = redactor.redact_text("export GITHUB_TOKEN=ghp_" + "a1B2c3D4e5" * 4)
    assert out == "export GITHUB_TOKEN=<REDACTED>" and counts == {"GITHUB_TOKEN": 1}


def test_exact_type_beats_family(redactor_factory: Callable[..., Redactor]) -> None:
    r = redactor_factory(operators={"SECRET": "drop", "JWT": "hash"}, hash_key="k")
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlLXNpZ25hdHVyZQ"
    out, _, _ = r.redact_text(f"token {jwt} and AKIAIOSFODNN7EXAMPLE")
    assert out.startswith("token <JWT:") and out.endswith(" and <REDACTED>")


def test_keep_counts_residual(redactor_factory: Callable[..., Redactor]) -> None:
    from sluice.events import Message, Observation, StepEvent

    r = redactor_factory(operators={"IP_ADDRESS": "keep"}, hash_key="k")
    step = StepEvent(trajectory_id="t", tenant="x", step_index=0,
                     observation=Observation(messages=[Message(role="user", content="from 203.0.113.7 by a@b.io")]))  # fmt: skip
    new, _ = r.redact_event(step)
    assert new.observation.messages[0].content == "from 203.0.113.7 by <EMAIL_ADDRESS_1>"
    report = new.governance.redaction_report
    assert report.entities == {"EMAIL_ADDRESS": 1} and report.residual == 1


def test_below_threshold_findings_are_residual(redactor_factory: Callable[..., Redactor]) -> None:
    from sluice.events import Message, Observation, StepEvent

    r = redactor_factory(residual_threshold=0.3, hash_key="k")
    text = "ticket 4158675309 closed"  # bare digits without a phone word score 0.4: kept, counted
    step = StepEvent(trajectory_id="t", tenant="x", step_index=0,
                     observation=Observation(messages=[Message(role="user", content=text)]))  # fmt: skip
    new, state = r.redact_event(step)
    assert new.observation.messages[0].content == text and state.size == 0
    assert new.governance.redaction_report.residual == 1
    assert new.governance.redaction_report.entities == {}
