"""Drain the pipeline before a clean stop: nothing accepted is left in the embedded broker's topics.

The embedded broker keeps its topics in memory, so records still in a topic when ``sluice up`` stops would
be gone at the next start. A clean stop therefore stops the proxy first (it hands its write-ahead log to
the broker and takes no new calls), then waits until the stage workers and the sink have consumed and
committed everything (lag 0 on every topic they read, twice in a row: the join may emit while the first
check runs). What is then still pending is in the stage tables, which the next start carries into the
new broker (``pipeline.stages.table_carry``).

    drained = drain(cfg, timeout_s=30)
"""

from __future__ import annotations

import logging
import time

from confluent_kafka import KafkaException

from app.config import SluiceConfig
from app.status import group_offsets
from pipeline.stages.names import app_id

log = logging.getLogger(__name__)


def drained_pairs(cfg: SluiceConfig) -> list[tuple[str, str]]:
    """(consumer group, topic) of every hop between the proxy and DuckDB."""
    t = cfg.topics
    stages = app_id(cfg.topics, cfg.stages)
    return [
        (stages, t.name("steps_raw")),
        (stages, t.name("rewards_raw")),
        (stages, t.name("erasure")),
        (cfg.sink.group_id, t.name("trajectories_audited")),
        (cfg.sink.group_id, t.name("deadletter")),
    ]


def lag(cfg: SluiceConfig) -> dict[str, int]:
    """Records not yet committed, per ``group/topic`` (0 where all is consumed)."""
    out: dict[str, int] = {}
    for group, topic in drained_pairs(cfg):
        done, end = group_offsets(cfg, group, topic)
        out[f"{group}/{topic}"] = max(0, end - done)
    return out


def drain(cfg: SluiceConfig, timeout_s: float, poll_s: float = 1.0) -> bool:
    """Wait until every hop's lag is 0 on two checks in a row; False on timeout (or no broker)."""
    deadline = time.monotonic() + timeout_s
    clean_checks = 0
    last: dict[str, int] = {}
    while time.monotonic() < deadline:
        try:
            last = lag(cfg)
        except (KafkaException, KeyError) as err:
            log.warning("cannot drain: the broker does not answer (%s)", err)
            return False
        clean_checks = clean_checks + 1 if not any(last.values()) else 0
        if clean_checks >= 2:
            return True
        time.sleep(poll_s)
    log.warning(
        "drain timed out after %.0fs; still unconsumed: %s", timeout_s, {k: v for k, v in last.items() if v}
    )
    return False
