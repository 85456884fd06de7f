"""``sluice demo``: the main job. Starts the embedded default (unless it already runs), drives realistic agent
traffic through the proxy with the real ``openai`` SDK, waits until it has landed, sends late rewards
after emission, and prints a summary and a few example queries.

    sluice demo [--trajectories 12] [--keep-running] [--verbose]
    sluice demo --learn [--minutes 20]     # the learning loop: app/learn_demo.py

By default the terminal shows one line per service as it starts, a live progress display (traffic sent,
trajectories landed, versions, rewards) and the summary; the services' logs go to ``var/logs/``.
``--verbose`` streams every service's log lines instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from app.config import SluiceConfig
from app.options import config_option, load_or_exit
from app.up import http_ok, running_stack
from pipeline.demo.progress import DemoProgress
from pipeline.demo.summary import EXAMPLE_QUERIES, landed, rows, summarise, wait_until
from pipeline.demo.traffic import AgentDriver, RunReport, plan
from pipeline.supervisor import shown_path
from sinks.clients import connect_client


def drive(
    cfg: SluiceConfig, count: int, model: str, console: Console, timeout_s: float, quiet: bool = False
) -> dict[str, Any]:
    """Run the demo traffic against a running stack; return the summary (also used by the system tests).
    ``quiet`` shows a live progress display instead of a line per phase."""
    keys = {k.key.get_secret_value(): k.tenant for k in cfg.proxy.api_keys}
    scenarios = plan(keys, count, seed=time.time_ns())
    driver = AgentDriver(f"http://{cfg.proxy.host}:{cfg.proxy.port}", model)
    report = RunReport()
    progress = (
        DemoProgress(cfg.sink_settings(), scenarios, sum(sc.turns for sc in scenarios), report, console)
        if quiet
        else contextlib.nullcontext()
    )

    def say(text: str) -> None:
        if not quiet:
            console.print(text)

    loop = asyncio.new_event_loop()
    try:
        with progress as shown:
            loop.run_until_complete(driver.run(scenarios, report))
            # the ids as the proxy answered them: tenant-scoped, or the proxy's for history-linked ones
            ids = [sc.trajectory_id for sc in scenarios]
            say(
                f"[bold]traffic sent[/]: {report.calls_ok} LLM calls ok, {len(report.calls_failed)} failed, "
                f"{report.rewards_posted} early rewards; malformed requests answered {report.malformed}"
            )
            client = connect_client(cfg.sink_settings(), api_key=None)
            try:
                if shown is not None:
                    shown.phase = "waiting for the trajectories to land"
                say(f"waiting for {len(ids)} trajectories to land in DuckDB ...")
                wait_until(lambda: landed(client, ids), timeout_s, "the trajectories to land")
                late = [sc.trajectory_id for sc in report.late_pending]
                loop.run_until_complete(driver.send_late_rewards(report))
                if shown is not None:
                    shown.phase = f"sent {len(late)} late rewards; waiting for their new versions"
                say(f"sent {len(late)} late rewards after emission; waiting for their new versions ...")
                wait_until(
                    lambda: landed(client, ids, {i: 2 for i in late}), timeout_s, "the late-reward versions"
                )
                summary = summarise(client, ids)
                examples = [(sql, rows(client, sql)) for sql in EXAMPLE_QUERIES]
            finally:
                client.close()
    finally:
        loop.run_until_complete(driver.aclose())
        loop.close()
    if quiet:
        console.print(f"malformed requests answered {report.malformed}")
    summary["llm calls ok"] = report.calls_ok
    summary["llm calls failed"] = len(report.calls_failed)
    summary["malformed requests (status)"] = report.malformed
    summary["identity mismatches"] = len(report.identity_mismatches)
    summary["_examples"] = examples
    return summary


def print_summary(console: Console, summary: dict[str, Any]) -> None:
    table = Table(title="Sluice demo: what landed", show_header=False)
    for key, value in summary.items():
        if key.startswith("_"):
            continue
        text = ", ".join(f"{k}={v}" for k, v in value.items()) if isinstance(value, dict) else str(value)
        table.add_row(key, text or "-")
    console.print(table)
    for sql, result in summary["_examples"]:
        console.print(f"\n[bold]$ sluice query[/] {json.dumps(sql)}")
        if not result:
            console.print("(no rows)")
            continue
        t = Table(*result[0].keys())
        for r in result:
            t.add_row(*(str(v) for v in r.values()))
        console.print(t)


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


@click.command("demo")
@config_option
@click.option(
    "--trajectories",
    "count",
    default=12,
    show_default=True,
    help="Scripted agent trajectories (12 covers every tenant, identity mode and reward plan once).",
)
@click.option("--model", default="sluice-tiny", show_default=True, help="Model name the agents ask for.")
@click.option("--keep-running", is_flag=True, help="Leave the services running after the summary.")
@click.option("--timeout", "timeout_s", default=180.0, show_default=True, help="Seconds to wait for landing.")
@click.option(
    "--verbose", is_flag=True, help="Stream every service's log lines instead of a progress display."
)
@click.option(
    "--learn",
    is_flag=True,
    help="The learning loop: agents solve verifiable tasks on SmolLM2, a checker posts rewards (some late), "
    "the live trainer serves what it learns; prints reward per policy version and writes a PNG plot.",
)
@click.option("--minutes", default=20.0, show_default=True, help="--learn: minutes of traffic.")
@click.option(
    "--tasks", default="extraction", show_default=True, help="--learn: comma-separated verifiable tasks."
)
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="--learn: PNG to write (default var/learn/reward_by_version.png).")  # fmt: skip
def demo_command(
    config_path: Path | None,
    count: int,
    model: str,
    keep_running: bool,
    timeout_s: float,
    learn: bool,
    minutes: float,
    tasks: str,
    plot_path: Path | None,
    verbose: bool,
) -> None:
    """Drive agent traffic through Sluice; show what landed.

    With --learn it also trains on that traffic and shows the model learning."""
    if learn:
        from app.learn_demo import run_learn_demo

        run_learn_demo(config_path, minutes, [t for t in tasks.split(",") if t], plot_path, timeout_s)
        return
    cfg = load_or_exit(config_path)
    # SIGTERM (a timeout, a terminal closing) stops the services it started, as Ctrl-C does
    signal.signal(signal.SIGTERM, _interrupt)
    for noisy in ("httpx", "httpx2", "openai"):  # one line per SDK request would drown the summary
        logging.getLogger(noisy).setLevel(logging.WARNING)
    if not verbose:
        logging.getLogger().setLevel(logging.WARNING)
    console = Console()
    already_up = http_ok(f"http://{cfg.proxy.host}:{cfg.proxy.port}/healthz")()
    if already_up:
        stack: contextlib.AbstractContextManager = contextlib.nullcontext()
        console.print(f"using the Sluice already running at http://{cfg.proxy.host}:{cfg.proxy.port}")
    else:
        stack = running_stack(cfg, config_path, verbose=verbose)
        if not verbose:
            logs = shown_path(cfg.path(cfg.up.log_file).parent)
            console.print(f"starting Sluice; service logs in {logs}/ (--verbose streams them here)")
    with stack as sup:
        try:
            summary = drive(cfg, count, model, console, timeout_s, quiet=not verbose)
        except TimeoutError as err:
            logs = shown_path(cfg.path(cfg.up.log_file).parent)
            raise click.ClickException(
                f"{err} (a busy machine may need --timeout longer than {timeout_s:.0f}s); where events wait: "
                f"`sluice status` while it runs, the services' logs in {logs}/"
            ) from None
        print_summary(console, summary)
        console.print(
            '\nTry: [bold]sluice query "SELECT * FROM trajectories LIMIT 5"[/], '
            "[bold]sluice export --format parquet --out var/exports/train.parquet[/], [bold]sluice status[/], "
            "[bold]sluice ui[/]"
        )
        if keep_running and sup is not None:
            console.print("services keep running; Ctrl-C stops them")
            sup.wait_forever()
