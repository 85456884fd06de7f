"""The crash-injection hook parses its spec and refuses unknown points."""

from __future__ import annotations

import pytest

from sinks.exceptions import SinkError
from sinks.faults import CrashPlan


def test_spec_parsing() -> None:
    assert CrashPlan(None).point is None
    plan = CrashPlan("after_write:3")
    assert (plan.point, plan.at) == ("after_write", 3)
    plan.reached("after_write")
    plan.reached("before_commit")
    plan.reached("after_write")  # 2nd of 3: still alive
    with pytest.raises(SinkError, match="unknown point"):
        CrashPlan("halfway")
    with pytest.raises(SinkError, match="integer"):
        CrashPlan("after_write:x")
