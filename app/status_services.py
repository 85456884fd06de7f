"""Every service's state for ``sluice status`` and the console, whatever the config.

Observations, gathered here: the `sluice up` supervisor's state file (pids, restarts, restarting), the
broker's reachability, the proxy's ``/healthz``, the local model's ``/v1/models``, the stage workers'
heartbeat files (``pipeline/stages/heartbeat.py``: present for every worker on this machine, with or
without a web port), the stage group's backlog, and the sink's ``/metrics`` (lag, records consumed).
Decisions: ``pipeline/health.py``.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from pathlib import Path

from app.config import SluiceConfig
from pipeline.health import Backlog, ServiceHealth, State, consumer, probed, stage_worker
from pipeline.stages.heartbeat import age_s, pid_alive, read_heartbeats


def up_services(cfg: SluiceConfig) -> dict[str, dict]:
    """What the running `sluice up` supervises (its state file), or nothing when it is not running."""
    path = cfg.path(cfg.up.state_file)
    try:
        data = json.loads(Path(path).read_text())
        os.kill(int(data["supervisor_pid"]), 0)  # a file left by a `sluice up` that is gone says nothing
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return data.get("services", {})


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1.5) as resp:
            return 200 <= resp.status < 300
    except OSError:
        return False


def stage_app_dir(cfg: SluiceConfig) -> Path:
    from pipeline.stages.names import app_id

    return cfg.path(cfg.stages.data_dir) / app_id(cfg.topics, cfg.stages)


def judge_services(
    cfg: SluiceConfig,
    broker_ok: bool,
    stage_backlog: Backlog | None,
    sink_metrics: dict[str, float] | str,
    sink_rate_per_s: float | None,
    proxy_metrics: dict[str, float] | str,
) -> dict[str, ServiceHealth]:
    """One entry per service that runs or should run, in start order."""
    sup = up_services(cfg)
    out: dict[str, ServiceHealth] = {}
    if cfg.broker.embedded or "broker" in sup:
        out["broker"] = probed("broker", broker_ok, sup.get("broker"), cfg.broker.bootstrap_servers)
    port = cfg.local_model_port()
    if port is not None and ("model" in sup or not sup):
        out["model"] = probed("model", answers(f"http://127.0.0.1:{port}/v1/models"), sup.get("model"))
    proxy_up = isinstance(proxy_metrics, dict)
    spool = proxy_metrics.get("sluice_proxy_spool_depth", 0) if proxy_up else 0
    out["proxy"] = probed(
        "proxy",
        proxy_up or answers(f"http://{cfg.proxy.host}:{cfg.proxy.port}/healthz"),
        sup.get("proxy"),
        f"http://{cfg.proxy.host}:{cfg.proxy.port}/v1" + (f" spool={spool:g}" if spool else ""),
    )
    out.update(_stage_workers(cfg, stage_backlog, sup))
    sink_up = isinstance(sink_metrics, dict)
    sink_backlog = (
        Backlog(int(sink_metrics.get("sluice_sink_lag_total", 0)), sink_rate_per_s) if sink_up else None
    )
    out["sink"] = consumer("sink", sink_backlog, sink_up, sup.get("sink"))
    for name, entry in sup.items():  # the rest (trainer, otel-export, ...): what the supervisor sees
        if name not in out:
            out[name] = probed(name, entry.get("state") == "up", entry, "process running")
    return out


def _stage_workers(
    cfg: SluiceConfig, backlog: Backlog | None, sup: dict[str, dict]
) -> dict[str, ServiceHealth]:
    """Each stage worker: the supervisor's workers matched to heartbeats by pid, then any other worker
    on this machine (started by hand) by its slot."""
    now = time.time()
    beats = read_heartbeats(stage_app_dir(cfg))
    by_pid = {b.pid: b for b in beats}
    out: dict[str, ServiceHealth] = {}
    seen: set[int] = set()
    for name, entry in sup.items():
        if not name.startswith("stages"):
            continue
        beat = by_pid.get(int(entry.get("pid") or -1))
        if beat is not None:
            seen.add(beat.pid)
        alive = beat is not None and entry.get("state") == "up" and pid_alive(beat.pid)
        out[name] = stage_worker(
            name, beat, alive, age_s(beat, now) if beat else 0.0, cfg.stages.heartbeat_s, backlog, entry
        )
    for beat in beats:
        if beat.pid in seen or (sup and not pid_alive(beat.pid)):
            continue  # a worker `sluice up` replaced: its successor is listed under the same name
        name = f"stages@{beat.slot}"
        out[name] = stage_worker(
            name, beat, pid_alive(beat.pid), age_s(beat, now), cfg.stages.heartbeat_s, backlog, None
        )
    if not out:  # no worker on this machine: judge the group by its progress on the broker
        detail = "no stage worker on this machine (no heartbeat files)"
        state: State = "unknown"
        if backlog is not None:
            detail += f"; group {backlog.describe()}"
            if backlog.rate_per_s:
                state = "lagging" if backlog.lagging() else "up"
            elif backlog.lag:
                state = "down"
        out["stages"] = ServiceHealth("stages", state, detail)
    return out
