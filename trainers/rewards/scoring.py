"""Call a reward function so that it cannot take the trainer down: exceptions and timeouts become
recorded failures (value 0.0, ``failed``), counted in the step metrics.

Departure: a Python function that hangs cannot be killed from a thread; after ``timeout_s`` the sample is
scored as a failure and the stuck call is left to finish on its own pool thread (subprocess-based graders
such as unit tests kill their process themselves).
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import math

from trainers.rewards.base import RewardContext, RewardFunction, RewardOutcome

log = logging.getLogger(__name__)
_POOL = cf.ThreadPoolExecutor(max_workers=4, thread_name_prefix="sluice-reward")


def safe_score(fn: RewardFunction, completion: str, ctx: RewardContext, timeout_s: float) -> RewardOutcome:
    future = _POOL.submit(fn.score, completion, ctx)
    try:
        value = future.result(timeout=timeout_s)
    except cf.TimeoutError:
        return _failure(fn, f"timed out after {timeout_s}s")
    except Exception as err:  # a grader's bug is a recorded failure, not a dead trainer
        return _failure(fn, f"{type(err).__name__}: {err}")
    if value is None:
        return _failure(fn, "no reward applies to this sample")
    if not isinstance(value, int | float) or not math.isfinite(value):
        return _failure(fn, f"returned {value!r}, not a finite number")
    return RewardOutcome(value=float(value))


def _failure(fn: RewardFunction, error: str) -> RewardOutcome:
    log.debug("reward %s failed: %s", fn.name, error)
    return RewardOutcome(value=0.0, failed=True, error=f"{fn.name}: {error}")
