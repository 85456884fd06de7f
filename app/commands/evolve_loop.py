"""The loop's commands in the ``sluice evolve`` group (registered lazily by ``app.commands.evolve``).

sluice evolve run              # one pass: decide running canaries, gate pending proposals
sluice evolve list             # every proposal and where it stands
sluice evolve explain ID       # what changed, why, on what evidence, each gate, what followed
sluice evolve rollback-overlay ID   # restore the overlay the proposal replaced (one publish)
sluice evolve serve            # passes on a schedule (what `sluice up --evolve` runs)
"""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path

import click

from app.options import config_option, load_or_exit


@click.command("run")
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print the pass's actions as JSON.")
def run_command(config_path: Path | None, as_json: bool) -> None:
    """One pass over running canaries and pending proposals."""
    from pipeline.evolve.wiring import open_runner

    cfg = load_or_exit(config_path)
    with open_runner(cfg.evolve_settings(), actor="operator") as runner:
        report = runner.run_pass()
    if as_json:
        click.echo(report.model_dump_json())
        return
    if not report.actions:
        click.echo("nothing to do: no running canary and no pending proposal")
    for a in report.actions:
        click.echo(f"{a.proposal_id}  {a.what:9s} {a.detail}")


@click.command("list")
@config_option
def list_command(config_path: Path | None) -> None:
    """List every proposal and where it stands.

    Each proposal in the ledger with its scope, surface and status."""
    from pipeline.evolve.ledger_state import proposal_states, read_ledger

    cfg = load_or_exit(config_path)
    states = proposal_states(read_ledger(cfg.broker, cfg.topics, cfg.evolve.ack_timeout_s))
    if not states:
        click.echo("no proposals in the ledger")
    for pid, st in sorted(states.items(), key=lambda kv: kv[1].proposal.created_at):
        last = st.entries[-1]
        click.echo(
            f"{pid}  {st.scope:24s} {st.proposal.surface:11s} {st.status:11s} "
            f"{last.created_at.isoformat()[:19]}  {last.summary[:70]}"
        )


@click.command("explain")
@config_option
@click.argument("proposal_id")
@click.option("--json", "as_json", is_flag=True, help="The ledger rows as JSON lines.")
def explain_command(config_path: Path | None, proposal_id: str, as_json: bool) -> None:
    """Explain a proposal: change, evidence, gates, outcome.

    What it changed, why, on what evidence, each gate's result and what happened after."""
    from pipeline.evolve.explain import explain, ledger_rows
    from sinks.clients import connect_client

    cfg = load_or_exit(config_path)
    client = connect_client(cfg.sink_settings(), None)
    try:
        got = ledger_rows(client, proposal_id)
    finally:
        client.close()
    if not got:
        raise click.ClickException(f"no ledger entries for {proposal_id} in evolution_ledger")
    if as_json:
        for row in got:
            click.echo(json.dumps(row, default=str))
        return
    click.echo(explain(got))


@click.command("rollback-overlay")
@config_option
@click.argument("proposal_id")
@click.option(
    "--reason",
    default="rolled back by an operator",
    show_default=True,
    help="Why, as the ledger records it.",
)
def rollback_overlay_command(config_path: Path | None, proposal_id: str, reason: str) -> None:
    """Restore the overlay a proposal replaced.

    Overlays, not weights (those roll back with `sluice train rollback`). One publish, recorded in the
    ledger first."""
    from pipeline.evolve.wiring import open_runner

    cfg = load_or_exit(config_path)
    with open_runner(cfg.evolve_settings(), actor="operator") as runner:
        try:
            after = runner.rollback(proposal_id, reason)
        except LookupError as err:
            raise click.ClickException(str(err)) from None
    active = after.active.overlay_id if after.active else "the bare agent"
    click.echo(f"rolled back {proposal_id}: {after.key} serves {active}")


@click.command("serve")
@config_option
def serve_command(config_path: Path | None) -> None:
    """Run passes on a schedule until stopped.

    One pass every evolve.interval_s, until SIGTERM or Ctrl-C."""
    import logging

    from pipeline.evolve.scheduler import serve

    cfg = load_or_exit(config_path)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        serve(cfg.evolve_settings(), stop)
    except KeyboardInterrupt:
        stop.set()
