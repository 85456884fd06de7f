"""Reward functions, their specs, and the safe-scoring wrapper."""

from __future__ import annotations

import time

import pytest
from pydantic import TypeAdapter, ValidationError

from trainers.exceptions import RewardError
from trainers.rewards.base import RewardContext, RewardFunction
from trainers.rewards.config import RewardSpec
from trainers.rewards.registry import build_reward
from trainers.rewards.scoring import safe_score

SPEC = TypeAdapter(RewardSpec)


def reward(spec: dict) -> RewardFunction:
    return build_reward(SPEC.validate_python(spec))


def ctx(reference: str | None = None, **kw: object) -> RewardContext:
    return RewardContext(reference=reference, **kw)


def test_exact_match() -> None:
    fn = reward({"kind": "exact_match"})
    assert fn.score(" 321\n", ctx("321")) == 1.0
    assert fn.score("32", ctx("321")) == 0.0
    assert reward({"kind": "exact_match", "case_sensitive": False}).score("ABC", ctx("abc")) == 1.0
    with pytest.raises(RewardError, match="reference"):
        fn.score("x", ctx(None))


def test_char_match_partial_credit() -> None:
    fn = reward({"kind": "char_match"})
    assert fn.score("321", ctx("321")) == 1.0
    assert fn.score("301", ctx("321")) == pytest.approx(2 / 3)
    assert fn.score("3219", ctx("321")) == pytest.approx(3 / 4)  # extra characters count against it
    assert fn.score("", ctx("")) == 1.0


def test_regex_and_numeric() -> None:
    assert reward({"kind": "regex", "pattern": r"\d+"}).score("abc 42", ctx()) == 1.0
    assert reward({"kind": "regex", "pattern": r"\d+", "full": True}).score("abc 42", ctx()) == 0.0
    num = reward({"kind": "numeric", "tolerance": 0.01})
    assert num.score("the answer is 1,234.005", ctx("1234")) == 1.0
    assert num.score("about 12", ctx("13")) == 0.0
    assert num.score("no number", ctx("13")) == 0.0
    assert reward({"kind": "numeric", "tolerance": 0.1, "relative": True}).score("105", ctx("100")) == 1.0
    with pytest.raises(RewardError):
        num.score("1", ctx("n/a"))


def test_unit_tests_by_subprocess() -> None:
    fn = reward({"kind": "unit_tests", "tests": "assert add(2, 3) == 5", "timeout_s": 10})
    assert fn.score("```python\ndef add(a, b):\n    return a + b\n```", ctx()) == 1.0
    assert fn.score("def add(a, b):\n    return a - b", ctx()) == 0.0
    from_reference = reward({"kind": "unit_tests", "timeout_s": 10})
    assert from_reference.score("x = 1", ctx("assert x == 1")) == 1.0
    slow = reward({"kind": "unit_tests", "tests": "pass", "timeout_s": 0.5})
    with pytest.raises(RewardError, match="timed out"):
        slow.score("while True:\n    pass", ctx())


def test_unit_tests_see_no_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    fn = reward(
        {
            "kind": "unit_tests",
            "tests": "import os\nassert 'OPENAI_API_KEY' not in os.environ",
            "timeout_s": 10,
        }
    )
    assert fn.score("", ctx()) == 1.0


def test_logged_and_weighted() -> None:
    logged = reward({"kind": "logged"})
    assert logged.score("x", ctx(logged_reward=0.7, is_logged=True)) == 0.7
    assert logged.score("x", ctx(logged_reward=0.7)) is None  # a fresh rollout: does not apply
    mix = reward(
        {"kind": "weighted", "parts": [
            {"weight": 3.0, "reward": {"kind": "exact_match"}},
            {"weight": 1.0, "reward": {"kind": "logged"}},
        ]}
    )  # fmt: skip
    assert mix.score("1", ctx("1", logged_reward=0.0, is_logged=True)) == pytest.approx(0.75)
    assert mix.score("1", ctx("1", logged_reward=0.0)) == 1.0  # renormalised over the parts that apply


def test_bad_specs_fail_validation() -> None:
    with pytest.raises(ValidationError, match="regular expression"):
        SPEC.validate_python({"kind": "regex", "pattern": "("})
    with pytest.raises(ValidationError, match="positive weight"):
        SPEC.validate_python({"kind": "weighted", "parts": [{"weight": 0, "reward": {"kind": "logged"}}]})
    with pytest.raises(ValidationError):
        SPEC.validate_python({"kind": "telepathy"})


class _Raises(RewardFunction):
    name = "raises"

    def score(self, completion: str, ctx: RewardContext) -> float | None:
        raise ZeroDivisionError("boom")


class _Slow(RewardFunction):
    name = "slow"

    def score(self, completion: str, ctx: RewardContext) -> float | None:
        time.sleep(2)
        return 1.0


class _NaN(RewardFunction):
    def score(self, completion: str, ctx: RewardContext) -> float | None:
        return float("nan")


def test_safe_score_records_failures() -> None:
    out = safe_score(_Raises(), "x", ctx(), timeout_s=5)
    assert out.failed and out.value == 0.0 and "ZeroDivisionError: boom" in out.error
    out = safe_score(_Slow(), "x", ctx(), timeout_s=0.2)
    assert out.failed and "timed out" in out.error
    assert safe_score(_NaN(), "x", ctx(), timeout_s=5).failed
    assert safe_score(reward({"kind": "logged"}), "x", ctx(), timeout_s=5).failed  # nothing applies
    ok = safe_score(reward({"kind": "exact_match"}), "a", ctx("a"), timeout_s=5)
    assert ok.value == 1.0 and not ok.failed
