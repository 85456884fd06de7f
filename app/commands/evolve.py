"""``sluice evolve``: the control plane's commands. ``propose`` reads the store, prints the failure
clusters with their evidence and the drafted proposals, and with ``--record`` puts each proposal in the
ledger (one ``LedgerEntry(kind="proposal")`` per proposal, acked by the broker).

    sluice evolve propose
    sluice evolve propose --record --model-base-url http://127.0.0.1:8000/v1 --model SmolLM2-135M-Instruct

The loop's commands (``run``, ``list``, ``explain``, ``rollback-overlay``, ``serve``) live in
``app.commands.evolve_loop`` and join the group lazily through ``SUBCOMMANDS``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from app.commands.sink import api_key_option
from app.config import SluiceConfig
from app.lazy_group import LazyGroup
from app.options import config_option, load_or_exit
from sinks.exceptions import SinkError
from sluice.evolution import FailureCluster, LedgerEntry, Proposal

SUBCOMMANDS: dict[str, str] = {
    name: f"app.commands.evolve_loop:{name.replace('-', '_')}_command"
    for name in ("run", "list", "explain", "rollback-overlay", "serve")
}


@click.group("evolve", cls=LazyGroup, lazy=SUBCOMMANDS, aliases={"rollback": "rollback-overlay"})
def evolve_group() -> None:
    """Control plane: propose, gate, ship, explain updates.

    Diagnoses failures, drafts overlay updates, proves them through the gates and explains each."""


def propose_config(cfg: SluiceConfig) -> Any:
    """The ``evolve.propose`` section of the config, else the defaults."""
    from pipeline.evolve.config import ProposeConfig

    section = getattr(getattr(cfg, "evolve", None), "propose", None)
    return section if isinstance(section, ProposeConfig) else ProposeConfig()


def _with_model(pcfg: Any, base_url: str | None, model: str | None, api_key: str | None) -> Any:
    from pipeline.evolve.config import ModelProposerConfig

    if not base_url and not model:
        return pcfg
    if not (base_url and model):
        raise click.UsageError("--model-base-url and --model go together")
    current = pcfg.proposers
    enabled = [*current.enabled, *([] if "model" in current.enabled else ["model"])]
    given = {"base_url": base_url, "model": model, **({"api_key": api_key} if api_key else {})}
    mcfg = ModelProposerConfig(**{**(current.model.model_dump() if current.model else {}), **given})
    return pcfg.model_copy(
        update={"proposers": current.model_copy(update={"enabled": enabled, "model": mcfg})}
    )


def _fmt(value: Any) -> str:
    return json.dumps(value, separators=(", ", ": "), default=str)


def print_cluster(c: FailureCluster, proposals: list[Proposal], show_sql: bool) -> None:
    scope = f"tenant={c.tenant or '*'} task={c.task_id or '-'}" + (f" tool={c.tool}" if c.tool else "")
    click.echo(f"cluster {c.cluster_id}  surface={c.surface}  {scope}")
    if c.error:
        click.echo(f"  error: {c.error}")
    reward = (
        f"; mean reward {c.mean_reward} vs {c.baseline_reward} in the rest"
        if c.mean_reward is not None
        else ""
    )
    click.echo(f"  signal: {c.signal}; {c.failures} of {c.trajectories} failed{reward}")
    click.echo(f"  why: {c.reason}")
    if c.sample_trajectory_ids:
        click.echo(f"  samples: {', '.join(c.sample_trajectory_ids)}")
    for ev in c.evidence:
        nums = dict(ev.numbers)
        test = (
            f"{nums.pop('test')} stat={nums.pop('statistic')} p={nums.pop('p_value'):.3g}; "
            if "test" in nums
            else ""
        )
        click.echo(f"  evidence: {test}{_fmt(nums)}")
        if show_sql:
            click.echo("    " + ev.query.replace("\n", "\n    "))
    for p in proposals:
        click.echo(
            f"  proposal {p.proposal_id} by {p.proposer}: {p.surface} -> overlay {p.candidate.overlay_id if p.candidate else '-'}"
        )
        click.echo(f"    rationale: {p.rationale}")
        if p.candidate:
            for m in p.candidate.memory:
                click.echo(f"    + memory: {m.text}")
            for h in p.candidate.harness_add:
                click.echo(f"    + harness [{h.item_id}]: {h.text}")
            for t in p.candidate.tools:
                click.echo(f"    + tool {t.tool}: {_fmt(t.model_dump(exclude_none=True, exclude={'tool'}))}")


def ledger_entry(p: Proposal) -> LedgerEntry:
    """The ledger's record of a proposal: its cluster and evidence, and the overlay it would apply."""
    return LedgerEntry(
        proposal_id=p.proposal_id,
        kind="proposal",
        surface=p.surface,
        tenant=p.tenant,
        task_id=p.task_id,
        summary=p.rationale,
        evidence={"proposer": p.proposer, "cluster": p.cluster.model_dump(mode="json") if p.cluster else None},
        diff={"candidate": p.candidate.model_dump(mode="json") if p.candidate else None,
              "base_overlay_id": p.base_overlay_id, "policy_version": p.policy_version},
        overlay_id=p.candidate.overlay_id if p.candidate else None,
        previous_overlay_id=p.base_overlay_id,
        policy_version=p.policy_version,
    )  # fmt: skip


@evolve_group.command("propose")
@click.option(
    "--record", is_flag=True, help="Publish each proposal to the ledger (waits for the broker's ack)."
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text for reading, json for scripts.")  # fmt: skip
@click.option("--sql", "show_sql", is_flag=True, help="Print the SQL under each piece of evidence.")
@click.option("--show-dismissed", is_flag=True, help="Also print candidates without enough evidence.")
@click.option("--overlays/--no-overlays", default=None,
              help="Read the active overlays so candidates edit them (default: with --record).")  # fmt: skip
@click.option("--model-base-url", default=None, help="Ask this OpenAI-compatible backend too.")
@click.option("--model", default=None, help="The model name at --model-base-url.")
@click.option("--model-api-key", envvar="SLUICE_EVOLVE_MODEL_API_KEY", default=None,
              help="Bearer key of --model-base-url (never printed).")  # fmt: skip
@api_key_option
@config_option
def propose_command(record: bool, fmt: str, show_sql: bool, show_dismissed: bool, overlays: bool | None,
                    model_base_url: str | None, model: str | None, model_api_key: str | None, api_key: str | None,
                    config_path: Path | None) -> None:  # fmt: skip
    """Diagnose failures and draft an update for each.

    Reads the store's failures, clusters them and drafts an update per cluster."""
    from pipeline.evolve.diagnose import run_diagnosis
    from pipeline.evolve.proposers.base import ProposerContext
    from pipeline.evolve.proposers.registry import build_proposers, draft_proposals
    from pipeline.evolve.publish import EvolutionPublisher, PublishError
    from sinks.clients import connect_client

    cfg = load_or_exit(config_path)
    pcfg = _with_model(propose_config(cfg), model_base_url, model, model_api_key)
    try:
        client = connect_client(cfg.sink_settings(), api_key)
        try:
            diagnosis, rows = run_diagnosis(client, pcfg.diagnosis)
        finally:
            client.close()
    except SinkError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(1)
    publisher = EvolutionPublisher(cfg.broker, cfg.topics)
    assignments = {}
    if overlays if overlays is not None else record:
        try:
            assignments = publisher.read_assignments()
        except Exception as err:  # noqa: BLE001 - the broker's errors vary; the message says what failed
            click.echo(f"error: cannot read the overlays topic: {err}", err=True)
            sys.exit(1)
    context = ProposerContext(
        rows=rows, success_reward=pcfg.diagnosis.failure_reward_below, assignments=assignments
    )
    proposals = draft_proposals(diagnosis.clusters, context, build_proposers(pcfg.proposers))
    by_cluster: dict[str, list[Proposal]] = {}
    for p in proposals:
        by_cluster.setdefault(p.cluster.cluster_id if p.cluster else "", []).append(p)
    if fmt == "json":
        out = {
            "diagnosis": diagnosis.model_dump(
                mode="json", exclude=set() if show_dismissed else {"dismissed"}
            ),
            "proposals": [p.model_dump(mode="json") for p in proposals],
            "notes": context.notes,
            "queries": rows.queries,
        }
        click.echo(json.dumps(out, indent=2))
    else:
        click.echo(
            f"diagnosis of {diagnosis.trajectories} trajectories ({diagnosis.judged} with an outcome, "
            f"{diagnosis.failed} failed): {len(diagnosis.clusters)} clusters, {len(proposals)} proposals"
        )
        for c in diagnosis.clusters:
            print_cluster(c, by_cluster.get(c.cluster_id, []), show_sql)
        if not diagnosis.clusters:
            click.echo("nothing significant: no-op")
        if show_dismissed:
            for c in diagnosis.dismissed:
                click.echo(f"dismissed {c.cluster_id} tenant={c.tenant} task={c.task_id or '-'}"
                           f"{' tool=' + c.tool if c.tool else ''}: {c.reason}")  # fmt: skip
        for note in context.notes:
            click.echo(f"note: {note}")
    if record:
        try:
            for p in proposals:
                entry = ledger_entry(p)
                publisher.record(entry)
                click.echo(f"recorded {p.proposal_id} as ledger entry {entry.entry_id}", err=fmt == "json")
        except PublishError as err:
            click.echo(f"error: {err}", err=True)
            sys.exit(1)
        finally:
            publisher.close()
