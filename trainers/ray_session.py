"""Ray hygiene in one place: explicit temp dir, auth mode, no dashboard, CPU count from config.

- temp dir: ``var/ray`` under the project when that path is short enough for Ray's unix-socket paths
  (~107 bytes including Ray's own ~60-byte suffix), else ``/tmp/sluice-ray-<hash of the project path>``;
- auth: Ray 2.60 turns token auth on by default and writes ``~/.ray/auth_token``. We set ``RAY_AUTH_MODE``
  explicitly; in ``token`` mode a random per-run token lives in this process's environment only (inherited
  by Ray's processes, never written to disk or logged); ``disabled`` is for a trusted single machine;
- an existing cluster (``trainer.ray_address``) brings its own token via ``RAY_AUTH_TOKEN``.

A session already initialised by the caller (tests share one per module) is reused, not shut down.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

from trainers.settings import TrainerSettings

log = logging.getLogger("sluice.trainer.ray")
MAX_TEMP_DIR_CHARS = 40
START_ATTEMPTS = 3  # local Ray starts retried when its node times out during startup


def ray_temp_dir(cfg: TrainerSettings) -> Path:
    if cfg.trainer.ray_temp_dir is not None:
        return cfg.path(cfg.trainer.ray_temp_dir)
    local = cfg.path("var/ray")
    if len(str(local)) <= MAX_TEMP_DIR_CHARS:
        return local
    return Path("/tmp") / f"sluice-ray-{hashlib.sha256(str(cfg.base_dir).encode()).hexdigest()[:8]}"


def prepare_ray_env(cfg: TrainerSettings) -> None:
    """Environment that must be set before ``import ray`` starts anything."""
    t = cfg.trainer
    os.environ["RAY_AUTH_MODE"] = t.ray_auth_mode
    if t.ray_auth_mode == "token" and t.ray_address is None and not os.environ.get("RAY_AUTH_TOKEN"):
        os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_DISABLE_IMPORT_WARNING", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:  # ray caches its config at import: make this process see the auth mode just set
        from ray._raylet import Config

        Config.initialize("")
    except (ImportError, AttributeError):  # pragma: no cover - other ray versions read the env at init
        pass


def init_ray(cfg: TrainerSettings) -> bool:
    """Start (or join) Ray; returns True when this call started it (and the caller should shut it down)."""
    import ray

    if ray.is_initialized():
        return False
    prepare_ray_env(cfg)
    t = cfg.trainer
    if t.ray_address is not None:
        ray.init(address=t.ray_address, include_dashboard=False, namespace="sluice", log_to_driver=True)
        return True
    temp = ray_temp_dir(cfg)
    temp.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            ray.init(
                num_cpus=t.num_cpus,
                num_gpus=t.num_gpus,
                _temp_dir=str(temp),
                include_dashboard=False,
                namespace="sluice",
                _node_ip_address="127.0.0.1",
                log_to_driver=True,
                configure_logging=False,
            )
            break
        except Exception as err:  # Ray waits a fixed 30 s for its raylet: too short on an overloaded machine
            if "timed out during startup" not in str(err) or attempt == START_ATTEMPTS:
                raise
            log.warning(
                "local Ray did not start in time (attempt %d of %d): retrying", attempt, START_ATTEMPTS
            )
            ray.shutdown()
    log.info("local Ray started: %d CPUs, temp dir %s, auth %s", t.num_cpus, temp, t.ray_auth_mode)
    return True


@contextlib.contextmanager
def ray_session(cfg: TrainerSettings) -> Iterator[None]:
    import ray

    started = init_ray(cfg)
    try:
        yield
    finally:
        if started:
            ray.shutdown()
