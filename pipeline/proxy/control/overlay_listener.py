"""Control: read the overlays topic into the latest assignment per scope.

A daemon thread consumes ``topics.name('overlays')`` (every partition, from the beginning, no consumer
group: every proxy reads all of it, and the compacted topic holds the latest assignment per scope) and
keeps the latest ``OverlayAssignment`` per key (``tenant/task``); a tombstone removes the scope. The
request path reads the map without a lock: the thread swaps in a new dict per change, so a reader sees
one whole map or the next. While the broker is down the proxy keeps serving with the map it has (empty
before the first read) and the thread keeps retrying.

A record that is not an assignment, or whose key is not its scope, is skipped with a warning: the proxy
applies nothing it cannot attribute.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from pipeline.proxy.control.topic_tail import TopicTail
from sluice.broker_config import BrokerConfig
from sluice.evolution import OverlayAssignment

log = logging.getLogger("sluice.proxy.overlays")


class OverlayListener(TopicTail):
    NAME = "proxy-overlays"
    LABEL = "overlays topic"
    log = log

    def __init__(self, broker: BrokerConfig, topic: str) -> None:
        super().__init__(broker, topic)
        self._assignments: dict[str, OverlayAssignment] = {}
        self.records_read = 0

    @property
    def assignments(self) -> Mapping[str, OverlayAssignment]:
        """The latest assignment per scope key (a snapshot: never changed after it is handed out)."""
        return self._assignments

    def apply(self, key: str | None, value: bytes | None) -> None:
        """Take one record of the topic into the map (called on the listener's thread)."""
        self.records_read += 1
        if value is None:
            if key is not None and key in self._assignments:
                rest = dict(self._assignments)
                rest.pop(key)
                self._assignments = rest
                log.info("overlay assignment %s removed", key)
            return
        try:
            assignment = OverlayAssignment.model_validate_json(value)
        except ValidationError:
            log.warning("overlays topic: skipped a record that is not an overlay assignment")
            return
        if key is not None and key != assignment.key:
            log.warning("overlays topic: skipped an assignment keyed %r for scope %r", key, assignment.key)
            return
        self._assignments = {**self._assignments, assignment.key: assignment}
        log.info(
            "overlay assignment %s: control %s, candidate %s at %.0f%%",
            assignment.key,
            assignment.active.overlay_id if assignment.active else "bare agent",
            assignment.candidate.overlay_id if assignment.candidate else "none",
            assignment.canary_share * 100,
        )

    def on_record(self, msg: Any) -> None:
        key = msg.key()
        self.apply(key.decode("utf-8", "replace") if key is not None else None, msg.value())
