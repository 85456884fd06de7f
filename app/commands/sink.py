"""Commands of the store: ``sluice sink``, ``sluice query``, ``sluice export``, ``sluice erase``.

``query``, ``export`` and ``erase`` go through the running sink's loopback endpoint when one serves the
configured database (DuckDB admits one writer), else they open the file: read-only for query and
export, read-write for erase (then tombstones are published from this process).

    sluice sink --config infra/sluice.yaml
    sluice query "SELECT tenant, count(*) FROM trajectories GROUP BY ALL"
    sluice export --format parquet --out var/exports/train.parquet
    sluice erase --subject user-42 --reason "GDPR art. 17 request #881"
"""

from __future__ import annotations

import getpass
import logging
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from app.options import config_option, load_or_exit
from sinks.exceptions import SinkError

if TYPE_CHECKING:
    from sinks.settings import SinkSettings

log = logging.getLogger(__name__)

api_key_option = click.option(
    "--api-key",
    envvar="SLUICE_API_KEY",
    default=None,
    help="A tenant's key (from proxy.api_keys) scopes to its rows; sink.admin_key for the operator.",
)


def _fail(err: Exception) -> None:
    click.echo(f"error: {err}", err=True)
    sys.exit(1)


@click.command("sink")
@config_option
def sink_command(config_path: Path | None) -> None:
    """Store audited trajectories in DuckDB; serve queries.

    Consumes the audited and dead-letter topics and serves queries while running."""
    from sinks.ingest import SinkRunner

    cfg = load_or_exit(config_path).sink_settings()
    log.info("sink config: %s", cfg.sink.model_dump_json())
    try:
        runner = SinkRunner(cfg)
        code = runner.run()
    except SinkError as err:
        _fail(err)
    sys.exit(code)


@click.command("query")
@click.argument("sql")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json", "jsonl"]),
    default="table",
    show_default=True,
    help="How the rows print.",
)
@api_key_option
@config_option
def query_command(sql: str, fmt: str, api_key: str | None, config_path: Path | None) -> None:
    """Run one read-only SQL query against the trajectory store."""
    from sinks.clients import connect_client
    from sinks.query_output import write_result

    cfg = load_or_exit(config_path).sink_settings()
    try:
        client = connect_client(cfg, api_key)
        table = client.query(sql).read_all()
    except SinkError as err:
        _fail(err)
    write_result(table, fmt)


@click.command("export")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "parquet"]), default="jsonl", show_default=True,
              help="File format of --out.")  # fmt: skip
@click.option("--query", "query", default=None, help="SQL whose rows to export (default: the training set).")
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="File to write (a manifest is written next to it).")  # fmt: skip
@click.option(
    "--granularity",
    type=click.Choice(["trajectory", "step"]),
    default="trajectory",
    show_default=True,
    help="One row per trajectory (multi-turn) or per LLM call.",
)
@click.option(
    "--layout",
    type=click.Choice(["auto", "rl", "rows", "dpo", "verl"]),
    default="auto",
    show_default=True,
    help="rl: prompt/completion/messages/reward rows; rows: the query result as is; dpo: prompt/chosen/"
    "rejected pairs from step feedback; verl: verl's RL dataset columns.",
)
@api_key_option
@config_option
def export_command(
    fmt: str,
    query: str | None,
    out: Path,
    granularity: str,
    layout: str,
    api_key: str | None,
    config_path: Path | None,
) -> None:
    """Export the training set for RL/SFT trainers.

    Or a query's trajectories; always with a manifest."""
    from sinks.admin_key import ensure_admin_key
    from sinks.clients import connect_client
    from sinks.erasure_receipt import register_export
    from sinks.export.exporter import export, manifest_path
    from sinks.principal import resolve_principal

    cfg = load_or_exit(config_path).sink_settings()
    try:
        scope = resolve_principal(cfg, api_key or ensure_admin_key(cfg)).describe()
        client = connect_client(cfg, api_key)
        manifest = export(client, out, fmt, query, granularity, layout, scope)  # type: ignore[arg-type]
        register_export(cfg, manifest_path(out))
    except SinkError as err:
        _fail(err)
    click.echo(
        f"wrote {manifest.rows} rows ({manifest.trajectories} trajectories) to {out}; "
        f"manifest {manifest_path(out)}"
    )


@click.command("erase")
@click.option("--trajectory", "trajectory", default=None, help="Erase one trajectory (every version).")
@click.option("--tenant", "tenant", default=None, help="Erase every trajectory of a tenant.")
@click.option("--subject", "subject", default=None, help="Erase every trajectory naming this data subject.")
@click.option("--reason", default=None, help="Why (ticket, legal basis): kept in the erasures audit table.")
@click.option("--requested-by", default=None, help="Who asked (default: the OS user).")
@click.option(
    "--wait-rebuild",
    type=float,
    default=0.0,
    show_default=True,
    help="Seconds to wait for the rebuilt policy versions and the gates' word on them (0: do not wait).",
)
@api_key_option
@config_option
def erase_command(
    trajectory: str | None,
    tenant: str | None,
    subject: str | None,
    reason: str | None,
    requested_by: str | None,
    wait_rebuild: float,
    api_key: str | None,
    config_path: Path | None,
) -> None:
    """Erase data everywhere and print the receipt.

    Covers DuckDB rows, compacted topics (tombstones), stage state and every proxy's linking state (erasure events), the trainer's pending tasks (tombstones); exports
    and checkpoints that hold the data are listed with their paths."""
    from pydantic import ValidationError

    from sinks.clients import connect_client
    from sinks.erasure_models import ErasureRequest

    chosen = [(s, v) for s, v in (("trajectory", trajectory), ("tenant", tenant), ("subject", subject)) if v]
    if len(chosen) != 1:
        click.echo("error: give exactly one of --trajectory, --tenant, --subject", err=True)
        sys.exit(2)
    cfg = load_or_exit(config_path).sink_settings()
    scope, target = chosen[0]
    try:
        req = ErasureRequest(
            scope=scope, target=target, requested_by=requested_by or getpass.getuser(), reason=reason
        )
    except ValidationError as err:
        click.echo(f"error: {err.errors(include_input=False)[0]['msg']}", err=True)
        sys.exit(2)
    try:
        result = connect_client(cfg, api_key).erase(req)
    except SinkError as err:
        _fail(err)
    click.echo(
        f"erasure {result.erasure_id} {result.status}: {result.trajectories} trajectories, "
        f"{sum(result.rows_deleted.values())} rows deleted, {result.tombstones} tombstones published"
    )
    for place in result.places:
        click.echo(f"  {place.place}: {place.removed}")
        for path in place.paths:
            click.echo(f"    {path}")
        if place.operator_action:
            click.echo(f"    to do: {place.operator_action}")
    weights = next((p for p in result.places if p.place == "weights"), None)
    if wait_rebuild > 0 and weights is not None and weights.versions:
        echo_rebuilds(cfg, api_key, result.erasure_id, wait_rebuild)


def echo_rebuilds(cfg: SinkSettings, api_key: str | None, erasure_id: str, wait_s: float) -> None:
    """The rest of the receipt: each version rebuilt in place of the tainted ones and the gates' newest word
    on it (the ``erasure_rebuilds`` view), once every rebuilt version has one or ``wait_s`` passed. What
    ``sluice erase --wait-rebuild`` prints after an erasure's receipt; callable for an erasure already made."""
    from sinks.clients import connect_client
    from sinks.views import quote_literal

    sql = (
        f"SELECT * FROM erasure_rebuilds WHERE erasure_id = {quote_literal(erasure_id)} ORDER BY proposed_at"
    )
    deadline = time.monotonic() + wait_s
    client = connect_client(cfg, api_key)
    try:
        while True:
            try:
                got = client.query(sql).read_all().to_pylist()
            except SinkError as err:  # a tenant's key reads no ledger-wide view: the receipt above stands
                click.echo(f"  rebuild: not readable with this key ({err})")
                return
            if (got and all(r["outcome_kind"] for r in got)) or time.monotonic() >= deadline:
                break
            time.sleep(2.0)
    finally:
        client.close()
    if not got:
        click.echo(f"  rebuild: no rebuilt version recorded within {wait_s:g} s (the ledger will show it)")
    for r in got:
        outcome = " ".join(str(r[k]) for k in ("outcome_kind", "outcome_gate", "outcome_decision") if r[k])
        passed = "" if r["outcome_passed"] is None else f" (passed: {r['outcome_passed']})"
        click.echo(f"  rebuild: v{r['rebuilt_version']} from v{r['rebuilt_from']} in place of "
                   f"{sorted(r['rebuild_of'])}; gates: {outcome + passed if outcome else 'not decided yet'}")  # fmt: skip
