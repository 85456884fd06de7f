"""Verifiable check: run the completion (Python source) followed by unit tests in a subprocess.

1.0 when the process exits 0 within the timeout, 0.0 when a test fails. A timeout is a recorded failure
(``RewardError``), and the process is killed. The subprocess runs in a fresh temporary directory with an
empty environment apart from PATH, so it sees no credentials of the trainer.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from trainers.exceptions import RewardError
from trainers.rewards.base import RewardContext, RewardFunction


def strip_code_fence(text: str) -> str:
    """The code inside a ```python fence when there is one, else the text."""
    if "```" not in text:
        return text
    body = text.split("```", 2)[1]
    return body.split("\n", 1)[1] if "\n" in body else body


class UnitTestsReward(RewardFunction):
    name = "unit_tests"

    def __init__(self, tests: str | None = None, timeout_s: float = 5.0, python: str | None = None) -> None:
        self.tests, self.timeout_s, self.python = tests, timeout_s, python or sys.executable

    def score(self, completion: str, ctx: RewardContext) -> float | None:
        tests = self.tests if self.tests is not None else ctx.reference
        if not tests:
            raise RewardError("unit_tests needs tests (in the spec or as the task's reference)")
        with tempfile.TemporaryDirectory(prefix="sluice-ut-") as tmp:
            script = Path(tmp) / "candidate.py"
            script.write_text(strip_code_fence(completion) + "\n\n" + tests + "\n")
            try:
                proc = subprocess.run(
                    [self.python, "-I", str(script)],
                    cwd=tmp,
                    env={"PATH": os.environ.get("PATH", "")},
                    capture_output=True,
                    timeout=self.timeout_s,
                )
            except subprocess.TimeoutExpired:
                raise RewardError(f"unit tests timed out after {self.timeout_s}s") from None
        return 1.0 if proc.returncode == 0 else 0.0
