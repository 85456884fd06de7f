"""``sluice up``: the embedded default on one machine, every service as its own process.

Order: local broker (unless a real one is configured) → topics → local CPU model server (when enabled) →
proxy → stage worker(s) → DuckDB sink → trainer (optional). One log stream with a prefix per service
(also appended to ``var/logs/up.log``); a service that crashes is restarted with backoff (the supervisor
says why; ``sluice status`` counts restarts); Ctrl-C stops everything in reverse order.

    sluice up                    # embedded default
    sluice up --with-trainer     # also run the async GRPO trainer on the train topic
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

import click

from infra.broker import port_open
from pipeline.supervisor import ServiceSpec, Supervisor, SupervisorError, shown_path, sluice_argv
from sluice.cli import config_option, load_or_exit
from sluice.config import SluiceConfig


def http_ok(url: str) -> Callable[[], bool]:
    def probe() -> bool:
        try:
            with urllib.request.urlopen(url, timeout=1) as resp:
                return 200 <= resp.status < 300
        except OSError:
            return False

    return probe


def recreate_topics(cfg: SluiceConfig) -> Callable[[], None]:
    """After a restart of the embedded broker: wait for its port, then create missing topics."""

    def run() -> None:
        from pipeline.topics import create_topics

        deadline = time.monotonic() + 30
        while not port_open("127.0.0.1", cfg.broker.port) and time.monotonic() < deadline:
            time.sleep(0.1)
        create_topics(cfg.broker, cfg.topics)

    return run


def service_specs(cfg: SluiceConfig, config_path: Path | None, with_trainer: bool) -> list[ServiceSpec]:
    """The services `sluice up` runs for this config, in start order."""
    specs: list[ServiceSpec] = []
    if cfg.broker.embedded:
        specs.append(
            ServiceSpec(
                "broker",
                sluice_argv("broker", config=config_path),
                ready_probe=lambda: port_open("127.0.0.1", cfg.broker.port),
                ready_timeout_s=30,
                endpoint=cfg.broker.bootstrap_servers,
                after_restart=recreate_topics(cfg),
            )
        )
    model_port = cfg.local_model_port()
    if model_port is not None:
        specs.append(
            ServiceSpec(
                "model",
                sluice_argv("serve-model", "--port", str(model_port), config=config_path),
                ready_probe=http_ok(f"http://127.0.0.1:{model_port}/v1/models"),
                endpoint=f"http://127.0.0.1:{model_port}/v1",
            )
        )
    specs.append(
        ServiceSpec(
            "proxy",
            sluice_argv("proxy", config=config_path),
            ready_probe=http_ok(f"http://{cfg.proxy.host}:{cfg.proxy.port}/healthz"),
            endpoint=f"http://{cfg.proxy.host}:{cfg.proxy.port}/v1",
        )
    )
    for i in range(cfg.stages.workers):
        specs.append(
            ServiceSpec(
                f"stages-{i}" if cfg.stages.workers > 1 else "stages",
                sluice_argv("stages", config=config_path),
                ready_timeout_s=300,  # engines + group join + table recovery: minutes on a busy 2-core box
            )
        )
    specs.append(
        ServiceSpec(
            "sink",
            sluice_argv("sink", config=config_path),
            endpoint=f"http://127.0.0.1:{cfg.sink.query_port}",
        )
    )
    if cfg.otel.enabled:
        specs.append(
            ServiceSpec(
                "otel-export", sluice_argv("otel-export", config=config_path), endpoint=cfg.otel.endpoint
            )
        )
    if with_trainer or cfg.trainer.enabled:
        specs.append(ServiceSpec("trainer", sluice_argv("train", config=config_path), ready_timeout_s=300))
    return specs


def reset_stage_state(cfg: SluiceConfig) -> None:
    """The embedded broker keeps topics in memory: stage tables on disk from an earlier run would point at
    changelogs that no longer exist, so they start empty with the broker. (The proxy's spool is kept: it
    holds events the broker never acknowledged, which replay into the new broker.)"""
    data_dir = cfg.path(cfg.stages.data_dir)
    if data_dir.exists():
        shutil.rmtree(data_dir)
        logging.getLogger(__name__).info("embedded broker starts empty: cleared stage state %s", data_dir)


@contextlib.contextmanager
def running_stack(
    cfg: SluiceConfig,
    config_path: Path | None,
    with_trainer: bool = False,
    log_path: Path | None = None,
    sink: TextIO | None = None,
    verbose: bool = True,
) -> Iterator[Supervisor]:
    """Start every service, yield the supervisor, stop everything on exit (also on errors). ``verbose``
    streams every service's log lines to ``sink``; otherwise one status line per service is printed and
    the logs go to ``<log dir>/<service>.log`` only."""
    from pipeline.topics import create_topics

    log_path = log_path or cfg.path(cfg.up.log_file)
    sup = Supervisor(
        log_path=log_path,
        sink=sink,
        policy=cfg.up,
        state_path=cfg.path(cfg.up.state_file),
        log_dir=log_path.parent,
        echo=verbose,
    )
    specs = service_specs(cfg, config_path, with_trainer)
    if cfg.broker.embedded:
        if port_open("127.0.0.1", cfg.broker.port):
            raise SupervisorError(
                f"127.0.0.1:{cfg.broker.port} is already in use: is another `sluice up` running? Stop it, or "
                "point broker.bootstrap_servers at a free port (or at that broker with embedded: false)"
            )
        reset_stage_state(cfg)
    try:
        if not cfg.broker.embedded:
            create_topics(cfg.broker, cfg.topics)
        stage_workers = [s for s in specs if s.name.startswith("stages")]
        for spec in specs:
            if spec.name.startswith("stages"):
                if spec is stage_workers[0]:  # workers of one group start together: one rebalance
                    sup.start_together(stage_workers)
                continue
            sup.start(spec)
            if spec.name == "broker":
                create_topics(cfg.broker, cfg.topics)
        yield sup
    finally:
        sup.stop_all()


@click.command("up")
@config_option
@click.option("--with-trainer", is_flag=True, help="Also run the async GRPO trainer.")
@click.option("--verbose", is_flag=True, help="Stream every service's log lines here (prefixed).")
def up_command(config_path: Path | None, with_trainer: bool, verbose: bool) -> None:
    """Start the whole pipeline on this machine; Ctrl-C stops it cleanly."""
    cfg = load_or_exit(config_path)
    if not verbose:
        logs = shown_path(cfg.path(cfg.up.log_file).parent)
        click.echo(f"starting sluice; service logs: {logs}/<service>.log (--verbose streams them here)")
    with running_stack(cfg, config_path, with_trainer, verbose=verbose) as sup:
        click.echo(
            f"sluice is up: {', '.join(sup.names())}. Agents: base_url=http://{cfg.proxy.host}:{cfg.proxy.port}/v1 "
            "— Ctrl-C stops everything."
        )
        sup.wait_forever()
    click.echo("sluice stopped")
