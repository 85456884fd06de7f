"""``sluice up``: the embedded default on one machine, every service as its own process.

Order: the local CPU model server (when enabled) loads while the local broker (unless a real one is
configured) and its topics come up; then the proxy, the stage worker(s) and the DuckDB sink start together;
then the trainer (optional). One log stream with a prefix per service
(also appended to ``var/logs/up.log``); a service that crashes is restarted with backoff (the supervisor
says why; ``sluice status`` counts restarts); Ctrl-C stops everything in reverse order.

    sluice up                    # embedded default
    sluice up --with-trainer     # also run the async GRPO trainer on the train topic
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

import click

from app.config import SluiceConfig
from app.options import config_option, load_or_exit
from infra.broker import port_open
from pipeline.control_journal import ControlJournal
from pipeline.stages.names import app_id
from pipeline.supervisor import ServiceSpec, Supervisor, SupervisorError, shown_path, sluice_argv


def control_journal(cfg: SluiceConfig) -> ControlJournal:
    """The journal of the embedded broker's control topics, in ``up.journal_dir``."""
    return ControlJournal(
        cfg.broker, cfg.topics, cfg.path(cfg.up.journal_dir), app_id(cfg.topics, cfg.stages)
    )


def http_ok(url: str) -> Callable[[], bool]:
    def probe() -> bool:
        try:
            with urllib.request.urlopen(url, timeout=1) as resp:
                return 200 <= resp.status < 300
        except OSError:
            return False

    return probe


# Started together once the broker and its topics are there: none needs another of them to start.
TOGETHER = ("proxy", "sink")

# What consumes the embedded broker's topics and keeps state or offsets of its own: stopped while the
# broker restarts, so that their state is carried into the new broker before they read from it.
BROKER_DEPENDENTS = ("stages", "sink", "otel-export", "trainer", "evolve")


def prepare_new_broker(cfg: SluiceConfig, say: Callable[[str], None], journal: ControlJournal) -> None:
    """A new embedded broker (every start is an empty cluster): create the topics, replay the control
    topics' journal (``pipeline/control_journal.py``), carry what the stage tables held into its
    changelogs (``pipeline/stages/table_carry.py``) before any worker starts, then journal again."""
    from pipeline.stages.table_carry import carry_tables
    from pipeline.topics import create_topics

    journal.stop()
    create_topics(cfg.broker, cfg.topics)
    restored = journal.restore()
    if any(restored.values()):
        say("replayed the control journal: " + ", ".join(f"{n} {t}" for t, n in restored.items() if n))
    journal.start()
    carried = carry_tables(cfg.stages_settings())
    if any(carried.records.values()):
        say(
            "carried pending stage state into the broker: "
            + ", ".join(f"{n} {t}" for t, n in carried.records.items() if n)
            + (f"; {carried.reemit} versions the store never got are sent again" if carried.reemit else "")
        )


def after_broker_restart(
    cfg: SluiceConfig, say: Callable[[str], None], journal: ControlJournal
) -> Callable[[], None]:
    """After a restart of the embedded broker (its consumers are stopped): wait for its port, then
    prepare it as at start. The proxy, still running, sends again whatever had not landed."""

    def run() -> None:
        deadline = time.monotonic() + 30
        while not port_open("127.0.0.1", cfg.broker.port) and time.monotonic() < deadline:
            time.sleep(0.1)
        prepare_new_broker(cfg, say, journal)

    return run


def service_specs(
    cfg: SluiceConfig,
    config_path: Path | None,
    with_trainer: bool,
    with_evolve: bool = False,
    say: Callable[[str], None] = print,
    journal: ControlJournal | None = None,
) -> list[ServiceSpec]:
    """The services `sluice up` runs for this config, in start order (``say``: the supervisor's voice;
    ``journal``: the embedded broker's control journal)."""
    specs: list[ServiceSpec] = []
    if cfg.broker.embedded:
        specs.append(
            ServiceSpec(
                "broker",
                sluice_argv("broker", config=config_path),
                ready_probe=lambda: port_open("127.0.0.1", cfg.broker.port),
                ready_timeout_s=30,
                endpoint=cfg.broker.bootstrap_servers,
                after_restart=after_broker_restart(cfg, say, journal or control_journal(cfg)),
                dependents=BROKER_DEPENDENTS,
            )
        )
    model_port = cfg.local_model_port()
    if model_port is not None:
        specs.append(
            ServiceSpec(
                "model",
                sluice_argv("serve-model", "--port", str(model_port), config=config_path),
                ready_probe=http_ok(f"http://127.0.0.1:{model_port}/v1/models"),
                # it loads while the other services start: on a busy 2-core box, minutes
                ready_timeout_s=max(300, cfg.up.ready_timeout_s),
                endpoint=f"http://127.0.0.1:{model_port}/v1",
            )
        )
    specs.append(
        ServiceSpec(
            "proxy",
            sluice_argv("proxy", config=config_path),
            ready_probe=http_ok(f"http://{cfg.proxy.host}:{cfg.proxy.port}/healthz"),
            ready_timeout_s=cfg.up.ready_timeout_s,
            endpoint=f"http://{cfg.proxy.host}:{cfg.proxy.port}/v1",
        )
    )
    for i in range(cfg.stages.workers):
        specs.append(
            ServiceSpec(
                f"stages-{i}" if cfg.stages.workers > 1 else "stages",
                sluice_argv("stages", config=config_path),
                # engines + group join + table recovery: minutes on a busy 2-core box
                ready_timeout_s=max(300, cfg.up.ready_timeout_s),
            )
        )
    specs.append(
        ServiceSpec(
            "sink",
            sluice_argv("sink", config=config_path),
            endpoint=f"http://127.0.0.1:{cfg.sink.query_port}",
            ready_timeout_s=cfg.up.ready_timeout_s,
        )
    )
    if cfg.otel.enabled:
        specs.append(
            ServiceSpec(
                "otel-export", sluice_argv("otel-export", config=config_path), endpoint=cfg.otel.endpoint
            )
        )
    if with_trainer or cfg.trainer.enabled:
        specs.append(
            ServiceSpec(
                "trainer",
                sluice_argv("train", config=config_path),
                ready_timeout_s=max(300, cfg.up.ready_timeout_s),
            )
        )
    gates = with_evolve or cfg.evolve.enabled
    if gates:
        specs.append(ServiceSpec("evolve", sluice_argv("evolve", "serve", config=config_path)))
    if (with_trainer or cfg.trainer.enabled) and cfg.trainer.promotion == "gated" and not gates:
        say(
            "note: trainer.promotion is gated and the control plane is not running here: trained versions "
            "wait as candidates until its gates promote them (sluice up --evolve, or sluice evolve serve)"
        )
    return [dataclasses.replace(s, stop_grace_s=cfg.up.stop_grace_s) for s in specs]


def stop_draining(sup: Supervisor, cfg: SluiceConfig) -> None:
    """Stop the stack without leaving records in the embedded broker: the proxy first (it hands its
    write-ahead log to the broker), then wait until the stages and the sink consumed everything, then the
    rest in reverse start order. A real cluster keeps its topics: everything stops at once."""
    from app.drain import drain

    if cfg.broker.embedded and cfg.up.drain_timeout_s > 0 and "proxy" in sup.names():
        alive = set(sup.names()) - set(sup.dead())
        if {"broker", "sink"} <= alive and any(n.startswith("stages") for n in alive):
            sup.stop("proxy")
            if drain(cfg, cfg.up.drain_timeout_s):
                sup.say("drained: the stages and the sink consumed everything the proxy handed over")
            else:
                sup.say("not drained: records still in the broker's topics are lost at this stop")
    sup.stop_all()


@contextlib.contextmanager
def running_stack(
    cfg: SluiceConfig,
    config_path: Path | None,
    with_trainer: bool = False,
    log_path: Path | None = None,
    sink: TextIO | None = None,
    verbose: bool = True,
    with_evolve: bool = False,
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
    journal = control_journal(cfg)
    specs = service_specs(cfg, config_path, with_trainer, with_evolve, say=sup.say, journal=journal)
    if cfg.broker.embedded and port_open("127.0.0.1", cfg.broker.port):
        raise SupervisorError(
            f"127.0.0.1:{cfg.broker.port} is already in use: is another `sluice up` running? Stop it, or "
            "point broker.bootstrap_servers at a free port (or at that broker with embedded: false)"
        )
    try:
        if not cfg.broker.embedded:
            create_topics(cfg.broker, cfg.topics)
        # The model server needs neither the broker nor its topics: it loads while they start. The proxy,
        # the stage workers (one group: one rebalance) and the sink need only those, so they start
        # together; what comes after them (the trainer, the gates) waits for the model too.
        together = [s for s in specs if s.name in TOGETHER or s.name.startswith("stages")]
        loading = sup.launch([s for s in specs if s.name == "model"])
        for broker in (s for s in specs if s.name == "broker"):
            sup.start(broker)
            prepare_new_broker(cfg, sup.say, journal)
        sup.start_together(together)
        sup.await_ready(loading)
        for spec in specs:
            if spec.name not in ("broker", "model") and spec not in together:
                sup.start(spec)
        yield sup
    finally:
        stop_draining(sup, cfg)
        journal.stop()


@click.command("up")
@config_option
@click.option("--with-trainer", is_flag=True, help="Also run the async GRPO trainer.")
@click.option(
    "--evolve", "with_evolve", is_flag=True, help="Also run the control plane's gates on a schedule."
)
@click.option("--verbose", is_flag=True, help="Stream every service's log lines here (prefixed).")
def up_command(config_path: Path | None, with_trainer: bool, with_evolve: bool, verbose: bool) -> None:
    """Start the whole pipeline on this machine.

    Ctrl-C stops it cleanly."""
    cfg = load_or_exit(config_path)
    if not verbose:
        logs = shown_path(cfg.path(cfg.up.log_file).parent)
        click.echo(f"starting sluice; service logs: {logs}/<service>.log (--verbose streams them here)")
    with running_stack(cfg, config_path, with_trainer, verbose=verbose, with_evolve=with_evolve) as sup:
        click.echo(
            f"sluice is up: {', '.join(sup.names())}. Agents: base_url=http://{cfg.proxy.host}:{cfg.proxy.port}/v1 "
            "— Ctrl-C stops everything."
        )
        sup.wait_forever()
    click.echo("sluice stopped")
