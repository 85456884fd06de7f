"""Build a reward function from its YAML spec (the provider: one place that knows every kind)."""

from __future__ import annotations

from trainers.rewards.base import RewardFunction
from trainers.rewards.char_match import CharMatchReward
from trainers.rewards.config import (
    CharMatchSpec,
    ExactMatchSpec,
    LoggedSpec,
    NumericSpec,
    RegexSpec,
    RewardSpec,
    UnitTestsSpec,
    WeightedSpec,
)
from trainers.rewards.exact_match import ExactMatchReward
from trainers.rewards.logged_reward import LoggedReward
from trainers.rewards.numeric_answer import NumericAnswerReward
from trainers.rewards.regex_match import RegexReward
from trainers.rewards.unit_tests import UnitTestsReward
from trainers.rewards.weighted import WeightedReward


def build_reward(spec: RewardSpec) -> RewardFunction:
    match spec:
        case ExactMatchSpec():
            return ExactMatchReward(strip=spec.strip, case_sensitive=spec.case_sensitive)
        case CharMatchSpec():
            return CharMatchReward(strip=spec.strip)
        case RegexSpec():
            return RegexReward(spec.pattern, full=spec.full)
        case NumericSpec():
            return NumericAnswerReward(tolerance=spec.tolerance, relative=spec.relative)
        case UnitTestsSpec():
            return UnitTestsReward(tests=spec.tests, timeout_s=spec.timeout_s, python=spec.python)
        case LoggedSpec():
            return LoggedReward()
        case WeightedSpec():
            return WeightedReward([(p.weight, build_reward(p.reward)) for p in spec.parts])
    raise TypeError(f"unknown reward spec {spec!r}")
