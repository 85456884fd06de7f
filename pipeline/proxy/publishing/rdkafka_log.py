"""Publishing: librdkafka's own log lines through Python logging, without the reconnect flood.

While the broker is down librdkafka logs a failed connect every few hundred milliseconds; the proxy keeps
serving and says once that it spools, so the same line is let through at most once per ``every_s``.
"""

from __future__ import annotations

import logging
import time


class _Throttle(logging.Filter):
    def __init__(self, every_s: float) -> None:
        super().__init__()
        self.every_s = every_s
        self._seen: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        # "[thrd:...]: host:port/id: Connect to ... failed: ..." -> drop the varying timings
        key = text.split(" (after ", 1)[0]
        now = time.monotonic()
        last = self._seen.get(key)
        if last is not None and now - last < self.every_s:
            return False
        if len(self._seen) > 1000:
            self._seen.clear()
        self._seen[key] = now
        return True


def rdkafka_logger(name: str = "sluice.rdkafka", every_s: float = 30.0) -> logging.Logger:
    logger = logging.getLogger(name)
    if not any(isinstance(f, _Throttle) for f in logger.filters):
        logger.addFilter(_Throttle(every_s))
    return logger
