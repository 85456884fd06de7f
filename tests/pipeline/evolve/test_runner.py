"""The loop over real topics and a real store: proposals go through the gates in order, a canary that
loses to control rolls back by itself, a winner is promoted and can be rolled back by hand, and every
decision is in the ledger before the assignment that names it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
from click.testing import CliRunner

from app.cli import cli as sluice_cli
from pipeline.demo.summary import scalar, wait_until
from pipeline.evolve.backend import EvalClient
from pipeline.evolve.ledger_state import proposal_states, read_ledger
from pipeline.evolve.publish import EvolutionPublisher
from pipeline.evolve.runner import EvolveRunner
from sinks.clients import connect_client
from sluice.evolution import LedgerEntry, Proposal, scope_key
from tests.pipeline.evolve.conftest import World
from tests.pipeline.evolve.world import CANDIDATES, TASK, TENANT, canary_traffic, proposal

SCOPE = scope_key(TENANT, TASK)


def record_proposal(pub: EvolutionPublisher, p: Proposal) -> None:
    pub.record(
        LedgerEntry(
            proposal_id=p.proposal_id, kind="proposal", surface=p.surface, tenant=p.tenant, task_id=p.task_id,
            summary=p.rationale, diff={"proposal": p.model_dump(mode="json")}, actor=p.proposer,
        )
    )  # fmt: skip


@pytest.fixture
def runner(world: World) -> Iterator[EvolveRunner]:
    cfg = world.cfg
    client = connect_client(cfg.sink_settings(), None)
    pub = EvolutionPublisher(cfg.broker, cfg.topics, 15)
    with EvalClient(cfg.proxy, cfg.evolve.eval) as ev:
        yield EvolveRunner(cfg.evolve, client, pub, ev, lambda: read_ledger(cfg.broker, cfg.topics, 15))
    pub.close()
    client.close()


def entries_of(world: World, pid: str) -> list[LedgerEntry]:
    return [e for e in read_ledger(world.cfg.broker, world.cfg.topics, 15) if e.proposal_id == pid]


def assert_every_assignment_was_recorded_first(world: World, runner: EvolveRunner) -> None:
    ledger = {e.entry_id: e for e in read_ledger(world.cfg.broker, world.cfg.topics, 15)}
    current = runner.pub.read_assignments(15)[SCOPE]
    entry = ledger[current.ledger_entry_id]
    assert entry.diff["after"]["event_id"] == current.event_id
    assert entry.created_at <= current.updated_at


def test_the_loop_gates_canaries_rolls_back_and_promotes(world: World, runner: EvolveRunner) -> None:
    harmful = proposal(CANDIDATES["unsafe_comply"], world.cluster, "harmful")
    loser = proposal(CANDIDATES["fixes"], world.cluster, "loses live")
    for p in (harmful, loser):
        record_proposal(runner.pub, p)

    first = runner.run_pass()
    did = {a.proposal_id: a.what for a in first.actions}
    assert did == {harmful.proposal_id: "reject", loser.proposal_id: "canary"}
    harmful_gates = [(e.gate, e.passed) for e in entries_of(world, harmful.proposal_id) if e.kind == "gate"]
    assert harmful_gates == [("replay", True), ("shadow", True), ("offline", False)]
    a = runner.pub.read_assignments(15)[SCOPE]
    assert a.candidate.overlay_id == loser.candidate.overlay_id and a.canary_share == 0.5 and a.active is None
    assert_every_assignment_was_recorded_first(world, runner)

    # live traffic: the candidate arm does worse than control (it passed offline but loses in canary)
    started = proposal_states(entries_of(world, loser.proposal_id))[loser.proposal_id].canary_started_at
    world.ingest(canary_traffic("live1", None, loser.candidate.overlay_id, 0.8, 0.1, 30, start=started))
    second = runner.run_pass()
    assert [(x.proposal_id, x.what) for x in second.actions] == [(loser.proposal_id, "rollback")]
    after = runner.pub.read_assignments(15)[SCOPE]
    assert after.candidate is None and after.active is None and after.canary_share == 0.0
    assert_every_assignment_was_recorded_first(world, runner)
    kinds = [(e.kind, e.gate, e.decision) for e in entries_of(world, loser.proposal_id)]
    assert kinds == [
        ("proposal", None, None),
        ("gate", "replay", "pass"),
        ("gate", "shadow", "pass"),
        ("gate", "offline", "pass"),
        ("canary", None, "start"),
        ("gate", "canary", "rollback"),
        ("rollback", None, "rollback"),
    ]

    # a new proposal in the scope waits out the cool-down after the rollback
    winner = proposal(
        CANDIDATES["fixes"].model_copy(update={"overlay_id": "ov-winner"}), world.cluster, "wins"
    )
    record_proposal(runner.pub, winner)
    third = runner.run_pass()
    assert [(x.proposal_id, x.what) for x in third.actions] == [(winner.proposal_id, "wait")]
    assert "cool-down" in third.actions[0].detail
    later = runner.run_pass(now=after.updated_at + timedelta(hours=2))
    assert [(x.proposal_id, x.what) for x in later.actions] == [(winner.proposal_id, "canary")]

    started = proposal_states(entries_of(world, winner.proposal_id))[winner.proposal_id].canary_started_at
    world.ingest(canary_traffic("live2", None, "ov-winner", 0.1, 0.9, 30, start=started))
    assert runner.run_pass().actions[0].what == "promote"
    promoted = runner.pub.read_assignments(15)[SCOPE]
    assert promoted.active.overlay_id == "ov-winner" and promoted.candidate is None

    restored = runner.rollback(winner.proposal_id, "operator saw complaints")
    assert restored.active is None and runner.pub.read_assignments(15)[SCOPE].active is None
    assert entries_of(world, winner.proposal_id)[-1].summary == "operator saw complaints"
    assert proposal_states(entries_of(world, winner.proposal_id))[winner.proposal_id].status == "rolled_back"
    with pytest.raises(LookupError):
        runner.rollback(harmful.proposal_id, "nothing to undo")

    # explain reads the sink's copy of the ledger
    n = len(entries_of(world, loser.proposal_id))
    sql = f"SELECT count(*) FROM evolution_ledger WHERE proposal_id = '{loser.proposal_id}'"
    wait_until(lambda: scalar(runner.client, sql) == n, 60, "the ledger in DuckDB")
    out = CliRunner().invoke(
        sluice_cli, ["evolve", "explain", loser.proposal_id, "--config", str(world.path)]
    )
    assert out.exit_code == 0, out.output
    print(out.output)
    for needle in ("[replay] passed", "[shadow] passed", "[offline] passed", "canary -> start",
                   "[canary] failed -> rollback", "+ memory: The promo code is SUNNY24."):  # fmt: skip
        assert needle in out.output, out.output


def test_the_cli_lists_and_runs(world: World) -> None:
    cli = CliRunner()
    got = cli.invoke(sluice_cli, ["evolve", "list", "--config", str(world.path)])
    assert got.exit_code == 0, got.output
    assert "rejected" in got.output and "rolled_back" in got.output
    ran = cli.invoke(sluice_cli, ["evolve", "run", "--config", str(world.path), "--json"])
    assert ran.exit_code == 0, ran.output
    missing = cli.invoke(sluice_cli, ["evolve", "rollback", "pr-nope", "--config", str(world.path)])
    assert missing.exit_code != 0 and "no proposal pr-nope" in missing.output


def test_the_scheduler_runs_passes_until_stopped(world: World) -> None:
    import threading

    from pipeline.evolve.scheduler import serve

    settings = world.cfg.evolve_settings()
    # a short schedule: the passes, not the wait between them, are what is under test
    fast = settings.model_copy(update={"evolve": settings.evolve.model_copy(update={"interval_s": 0.5})})
    started = time.monotonic()
    reports = serve(fast, threading.Event(), passes=2)
    assert len(reports) == 2
    assert time.monotonic() - started >= fast.evolve.interval_s  # the second pass waited its interval
