"""Fault injection for crash tests: kill the sink with ``os._exit`` at a named point of a write.

Set ``SLUICE_SINK_CRASH_AT=POINT`` or ``POINT:N`` (the Nth time the point is reached, default 1st).
Points: ``after_poll`` (records consumed, nothing written), ``after_write`` (rows written in the open
transaction, offsets not yet), ``before_commit`` (rows and offsets written, not committed),
``after_commit`` (committed, before the broker is told), ``after_erase_db`` (an erasure is committed in
DuckDB, tombstones not yet published). ``os._exit`` skips every cleanup, like a power cut.

    SLUICE_SINK_CRASH_AT=after_write:2 sluice sink --config infra/sluice.yaml
"""

from __future__ import annotations

import logging
import os
import sys

from sinks.exceptions import SinkError

CRASH_ENV = "SLUICE_SINK_CRASH_AT"
CRASH_EXIT_CODE = 86
CRASH_POINTS = ("after_poll", "after_write", "before_commit", "after_commit", "after_erase_db")

log = logging.getLogger(__name__)


class CrashPlan:
    """Where to crash, parsed once from the environment."""

    def __init__(self, spec: str | None) -> None:
        self.point: str | None = None
        self.at = 1
        self._seen = 0
        if not spec:
            return
        point, _, nth = spec.partition(":")
        if point not in CRASH_POINTS:
            raise SinkError(f"{CRASH_ENV}={spec!r}: unknown point, expected one of {', '.join(CRASH_POINTS)}")
        try:
            self.at = int(nth) if nth else 1
        except ValueError:
            raise SinkError(f"{CRASH_ENV}={spec!r}: the count after ':' must be an integer") from None
        self.point = point

    @classmethod
    def from_env(cls) -> CrashPlan:
        return cls(os.environ.get(CRASH_ENV))

    def reached(self, point: str) -> None:
        """Exit the process at once if this is the planned point and occurrence."""
        if point != self.point:
            return
        self._seen += 1
        if self._seen == self.at:
            log.warning("fault injection: crashing at %s (#%d)", point, self._seen)
            for h in logging.getLogger().handlers:
                h.flush()
            sys.stderr.flush()
            os._exit(CRASH_EXIT_CODE)
