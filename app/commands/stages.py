"""``sluice stages``: run one governance-stage worker (Faust) in the foreground.

    sluice stages --config infra/sluice.yaml            # more workers = more of these, same config
    sluice stages --config infra/sluice.yaml --worker-index 1

Creates the topics if needed, takes a free data slot under ``stages.data_dir/<app id>``, builds the redaction
engines, then runs the Faust worker without its web server (unless ``stages.web_port`` is set). Logs
``sluice stages ready: ...`` once its partitions are assigned and its tables recovered; SIGTERM or Ctrl-C
stops it cleanly (in-flight records finish, offsets are committed).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click

from app.options import config_option, load_or_exit

log = logging.getLogger("sluice.stages")

# Presidio imports Hugging Face transformers, and with it torch, for NLP engines the stages never build
# (redaction is pattern-only, or spaCy for NER, which needs neither); both behind ``try: import``. Kept
# out, a worker starts on a fraction of the CPU and memory (``python -m bench.stage_startup``);
# ``tests/pipeline/stages/test_stages_e2e.py`` checks that a running worker never maps torch.
NEVER_IMPORTED = ("transformers", "torch")


def keep_unused_modules_out() -> None:
    """Make ``import`` of ``NEVER_IMPORTED`` fail in this process (an ``ImportError`` the importer handles),
    unless one is imported already."""
    for name in NEVER_IMPORTED:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]


@click.command("stages")
@config_option
@click.option("--worker-index", type=int, default=None, help="Data slot to use (default: the first free).")
@click.option("--log-level", default="INFO", show_default=True, help="Faust worker log level.")
def stages_command(config_path: Path | None, worker_index: int | None, log_level: str) -> None:
    """Run a governance stage worker.

    Its stages: redact, eligibility, reward join, replay grade."""
    keep_unused_modules_out()
    import faust

    from pipeline.stages.app import StagesApp
    from pipeline.stages.heartbeat import remove_heartbeat
    from pipeline.stages.internal_topics import ensure_stage_topics
    from pipeline.stages.names import app_id
    from pipeline.stages.worker_slot import acquire_slot
    from sluice.heap import settle_heap

    cfg = load_or_exit(config_path).stages_settings()
    ensure_stage_topics(cfg)
    # per app id: table files are named after the table only, so another app's must never be reused
    slot = acquire_slot(cfg.path(cfg.stages.data_dir) / app_id(cfg.topics, cfg.stages), worker_index)
    stages = StagesApp(cfg, slot.datadir)
    log.info(
        "stages config: app=%s slot=%d datadir=%s store=%s partitions=%d rewards=%s replay=%s policy=%s",
        stages.app.conf.id,
        slot.index,
        slot.datadir,
        stages.store,
        cfg.topics.partitions,
        cfg.rewards.model_dump_json(),
        cfg.replay.model_dump_json(),
        cfg.eligibility.version,
    )
    # Faust's rocksdb store runs gc.collect() on every partition revoke (once per table) and at stop. With
    # the redaction engines on the heap a full collection took ~1.9 s here, holding the GIL, so the
    # consumer thread's heartbeats stopped for longer than the session timeout: the broker expired the
    # member, which revoked again, and after a broker freeze the group never settled (lag stuck, rate 0).
    # Everything built so far lives as long as the worker: freeze it out of the collector's scans.
    settle_heap()
    try:
        faust.Worker(stages.app, loglevel=log_level, redirect_stdouts=False).execute_from_commandline()
    finally:
        remove_heartbeat(stages.heartbeat_file)  # a clean stop; a crash leaves it, with a dead pid
        slot.release()
