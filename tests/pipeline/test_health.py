"""Service states from observations: a missing metrics port is never 'down'; lag, stuck heartbeats,
restarts and dead processes each say what they are."""

from __future__ import annotations

import time
from pathlib import Path

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


def test_heartbeat_files_name_every_worker_on_the_machine(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from app.config import parse_config
    from app.status_services import _stage_workers, stage_app_dir
    from pipeline.stages.heartbeat import heartbeat_path, write_heartbeat

    cfg = parse_config({"stages": {"data_dir": str(tmp_path / "stages")}}, base_dir=tmp_path)
    app_dir = stage_app_dir(cfg)
    app_dir.mkdir(parents=True)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    now = time.time()
    write_heartbeat(
        heartbeat_path(app_dir / "worker-0"), BEAT.model_copy(update={"pid": os.getpid(), "updated": now})
    )
    write_heartbeat(
        heartbeat_path(app_dir / "worker-1"),
        BEAT.model_copy(update={"slot": 1, "pid": int(gone.stdout), "updated": now}),
    )
    got = _stage_workers(cfg, Backlog(0, 0.0), {})
    assert {k: v.state for k, v in got.items()} == {"stages@0": "up", "stages@1": "down"}
    assert "is gone" in got["stages@1"].detail
