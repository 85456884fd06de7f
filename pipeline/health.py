"""The state of each service, judged from what it publishes: ``up``, ``starting``, ``lagging``,
``restarting`` or ``down``.

Pure decisions (no I/O): ``sluice status`` and the console gather the observations — the supervisor's
state file, HTTP probes, stage-worker heartbeat files, consumer lag and its rate — and these functions
turn them into one state and a short reason per service. An absent metrics port is never read as
``down``: a service is down only when a probe that should answer does not, or its process is gone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pipeline.stages.heartbeat import WorkerHeartbeat

State = Literal["up", "starting", "lagging", "restarting", "down", "unknown"]

LAG_DRAIN_S = 10.0  # lagging: the backlog would take longer than this to drain at the measured rate
STALE_BEATS = 3  # a heartbeat older than this many intervals: the worker is stuck


@dataclass
class ServiceHealth:
    name: str
    state: State
    detail: str = ""
    restarts: int = 0
    last_exit: str | None = None
    pid: int | None = None


@dataclass(frozen=True)
class Backlog:
    """A consumer's backlog: records not yet processed and the rate it processed at over the interval."""

    lag: int
    rate_per_s: float | None  # None: measured once only (no interval)

    def drain_s(self) -> float | None:
        if self.lag == 0:
            return 0.0
        if not self.rate_per_s:
            return None  # not moving
        return self.lag / self.rate_per_s

    def lagging(self, drain_limit_s: float = LAG_DRAIN_S) -> bool:
        """Behind: records wait and the consumer is not moving (measured over an interval), or moving
        too slowly to drain them within ``drain_limit_s``."""
        if self.lag == 0 or self.rate_per_s is None:
            return False
        drain = self.drain_s()
        return drain is None or drain > drain_limit_s

    def describe(self) -> str:
        rate = "-" if self.rate_per_s is None else f"{self.rate_per_s:.0f}/s"
        return f"lag={self.lag} rate={rate}"


def supervised_state(entry: dict | None) -> State | None:
    """What the `sluice up` supervisor says of a service (``None`` when it does not run it)."""
    if not entry:
        return None
    state = entry.get("state")
    return state if state in ("up", "restarting", "down") else None


def probed(name: str, answered: bool, supervisor: dict | None, detail: str = "") -> ServiceHealth:
    """A service with an HTTP or TCP endpoint: up when it answers; otherwise restarting when its
    supervisor is restarting it, else down."""
    health = _base(name, supervisor)
    if answered:
        health.state, health.detail = "up", detail
    elif supervised_state(supervisor) == "restarting":
        health.state, health.detail = "restarting", f"after {health.last_exit or 'an exit'}"
    elif supervised_state(supervisor) == "up":
        health.state, health.detail = "starting", "process running, endpoint not answering yet"
    else:
        health.state, health.detail = "down", "does not answer"
    return health


def stage_worker(
    name: str,
    beat: WorkerHeartbeat | None,
    alive: bool,
    age_s: float,
    heartbeat_s: float,
    backlog: Backlog | None,
    supervisor: dict | None,
) -> ServiceHealth:
    """A stage worker, from its heartbeat file (``alive``: its pid exists), the stage group's backlog
    and the supervisor's entry."""
    health = _base(name, supervisor)
    sup = supervised_state(supervisor)
    if beat is None or not alive:
        if sup == "restarting":
            health.state, health.detail = "restarting", f"after {health.last_exit or 'an exit'}"
        elif sup == "up":
            health.state, health.detail = "starting", "process running, no heartbeat yet"
        else:
            health.state = "down"
            health.detail = f"pid {beat.pid} is gone" if beat is not None else "no heartbeat"
        return health
    health.pid = beat.pid
    counts = beat.counts
    work = f"processed={counts.get('redact_in', 0) + counts.get('join_in', 0)} pending_joins={beat.pending_joins}"
    if age_s > STALE_BEATS * heartbeat_s:
        health.state, health.detail = "lagging", f"stuck: no heartbeat for {age_s:.0f}s; {work}"
    elif not beat.assigned:
        health.state, health.detail = "starting", f"joining the group / recovering tables; {work}"
    elif backlog is not None and backlog.lagging():
        health.state, health.detail = "lagging", f"{backlog.describe()}; {work}"
    else:
        health.state, health.detail = "up", work
    return health


def consumer(name: str, backlog: Backlog | None, answered: bool, supervisor: dict | None) -> ServiceHealth:
    """A consumer with an endpoint (the sink): down when the endpoint is gone, lagging when behind."""
    health = probed(name, answered, supervisor)
    if health.state == "up" and backlog is not None:
        health.detail = backlog.describe()
        if backlog.lagging():
            health.state = "lagging"
    return health


def _base(name: str, supervisor: dict | None) -> ServiceHealth:
    entry = supervisor or {}
    return ServiceHealth(
        name,
        "unknown",
        restarts=int(entry.get("restarts", 0) or 0),
        last_exit=entry.get("last_exit"),
        pid=entry.get("pid"),
    )
