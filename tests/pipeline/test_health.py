"""Service states from observations: a missing metrics port is never 'down'; lag, stuck heartbeats,
restarts and dead processes each say what they are."""

from __future__ import annotations

import time

from pipeline.health import Backlog, consumer, probed, stage_worker
from pipeline.stages.heartbeat import WorkerHeartbeat

BEAT = WorkerHeartbeat(
    slot=0, pid=1, updated=time.time(), assigned=True, counts={"redact_in": 5, "join_in": 3}
)


def test_backlog_lagging_only_when_it_does_not_drain() -> None:
    assert not Backlog(0, 0.0).lagging()
    assert not Backlog(200, 400.0).lagging()  # drains in half a second
    assert Backlog(200, 0.0).lagging()  # not moving
    assert Backlog(50_000, 100.0).lagging()  # 500 s to drain
    assert not Backlog(200, None).lagging()  # one sample: no rate, no verdict


def test_stage_worker_states() -> None:
    up = stage_worker("stages-0", BEAT, True, 1.0, 2.0, Backlog(0, 0.0), {"state": "up", "pid": 1})
    assert up.state == "up" and "processed=8" in up.detail
    assert stage_worker("s", BEAT, True, 1.0, 2.0, Backlog(10_000, 5.0), None).state == "lagging"
    stuck = stage_worker("s", BEAT, True, 30.0, 2.0, Backlog(0, 0.0), None)
    assert stuck.state == "lagging" and "no heartbeat for 30s" in stuck.detail
    joining = BEAT.model_copy(update={"assigned": False})
    assert stage_worker("s", joining, True, 1.0, 2.0, None, None).state == "starting"
    restarting = {"state": "restarting", "restarts": 2, "last_exit": "killed by SIGKILL"}
    r = stage_worker("s", BEAT, False, 1.0, 2.0, None, restarting)
    assert (r.state, r.restarts, r.last_exit) == ("restarting", 2, "killed by SIGKILL")
    assert stage_worker("s", BEAT, False, 1.0, 2.0, None, None).state == "down"
    assert stage_worker("s", None, False, 0.0, 2.0, None, {"state": "up"}).state == "starting"


def test_probed_and_consumer_states() -> None:
    assert probed("proxy", True, None).state == "up"
    assert probed("proxy", False, None).state == "down"
    assert probed("proxy", False, {"state": "restarting"}).state == "restarting"
    assert consumer("sink", Backlog(5, 100.0), True, None).state == "up"
    assert consumer("sink", Backlog(5_000, 0.0), True, None).state == "lagging"
    assert consumer("sink", None, False, None).state == "down"
