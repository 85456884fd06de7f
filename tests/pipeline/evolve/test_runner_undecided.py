"""A gate whose backend fails is undecided, not a rejection: the ledger records ``undecided`` with the
tries and the error, the proposal stays pending and a later pass decides it; after
``limits.max_undecided`` such passes the proposal is dropped, with the reason."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from infra.broker import free_port
from pipeline.evolve.backend import EvalClient
from pipeline.evolve.http_calls import CallPolicy
from pipeline.evolve.ledger_state import proposal_states, read_ledger
from pipeline.evolve.publish import EvolutionPublisher
from pipeline.evolve.runner import EvolveRunner
from pipeline.proxy.config import BackendConfig
from sinks.clients import connect_client
from tests.pipeline.evolve.conftest import World
from tests.pipeline.evolve.test_runner import record_proposal
from tests.pipeline.evolve.world import CANDIDATES, MODEL, proposal


@contextmanager
def open_runner(world: World, backend_down: bool, max_undecided: int = 3) -> Iterator[EvolveRunner]:
    """The loop over the world's store and topics; ``backend_down``: its evaluation backend refuses."""
    cfg = world.cfg
    proxy, evolve = cfg.proxy, cfg.evolve
    if backend_down:
        dead = BackendConfig(name="scripted", base_url=f"http://127.0.0.1:{free_port()}/v1", models=[MODEL])
        proxy = proxy.model_copy(update={"backends": [dead]})
    evolve = evolve.model_copy(update={
        "eval": evolve.eval.model_copy(update={"http": CallPolicy(attempts=2, backoff_s=0.05)}),
        "limits": evolve.limits.model_copy(update={"max_undecided": max_undecided}),
    })  # fmt: skip
    client = connect_client(cfg.sink_settings(), None)
    pub = EvolutionPublisher(cfg.broker, cfg.topics, 15)
    try:
        with EvalClient(proxy, evolve.eval) as ev:
            yield EvolveRunner(evolve, client, pub, ev, lambda: read_ledger(cfg.broker, cfg.topics, 15))
    finally:
        pub.close()
        client.close()


def test_a_failing_backend_leaves_the_proposal_pending_until_a_later_pass_decides(world: World) -> None:
    fix = proposal(CANDIDATES["fixes"], world.cluster, "fix while the backend is down")
    with open_runner(world, backend_down=True) as runner:
        record_proposal(runner.pub, fix)
        report = runner.run_pass()
    assert [(a.proposal_id, a.what) for a in report.actions] == [(fix.proposal_id, "undecided")]
    state = proposal_states(read_ledger(world.cfg.broker, world.cfg.topics, 15))[fix.proposal_id]
    assert state.status == "pending" and state.undecided_passes == 1
    last = state.entries[-1]
    assert (last.kind, last.gate, last.decision) == ("decision", "shadow", "undecided")
    assert last.evidence["attempts"] == 2 and "ConnectError after 2 attempts" in last.evidence["error"]
    assert last.evidence["undecided_passes"] == 1 and last.evidence["max_undecided"] == 3
    assert not any(e.decision == "reject" for e in state.entries)

    with open_runner(world, backend_down=False) as runner:  # the backend is back: the gates decide
        report = runner.run_pass()
    assert [(a.proposal_id, a.what) for a in report.actions] == [(fix.proposal_id, "canary")]
    state = proposal_states(read_ledger(world.cfg.broker, world.cfg.topics, 15))[fix.proposal_id]
    assert state.status == "canary"
    assert [(e.gate, e.decision) for e in state.entries if e.kind != "proposal"] == [
        ("replay", "pass"), ("shadow", "undecided"),
        ("replay", "pass"), ("shadow", "pass"), ("offline", "pass"), (None, "start"),
    ]  # fmt: skip


def test_a_proposal_undecided_on_too_many_passes_is_dropped(world: World) -> None:
    states = proposal_states(read_ledger(world.cfg.broker, world.cfg.topics, 15))
    running = next(s for s in states.values() if s.status == "canary")
    other = proposal(
        CANDIDATES["fixes"].model_copy(update={"overlay_id": "ov-later"}), world.cluster, "later"
    )
    with open_runner(world, backend_down=True, max_undecided=2) as runner:
        runner.rollback(running.proposal.proposal_id, "make room in the scope")
        record_proposal(runner.pub, other)
        later = running.entries[-1].created_at.replace(year=running.entries[-1].created_at.year + 1)
        first = runner.run_pass(now=later)  # past the cool-down after the rollback
        second = runner.run_pass(now=later)
        third = runner.run_pass(now=later)
    assert [a.what for a in first.actions] == ["undecided"]
    assert [a.what for a in second.actions] == ["undecided", "drop"]
    assert "2 passes (limit 2)" in second.actions[1].detail
    assert third.actions == []
    state = proposal_states(read_ledger(world.cfg.broker, world.cfg.topics, 15))[other.proposal_id]
    assert state.status == "dropped" and state.undecided_passes == 2
    assert state.entries[-1].decision == "drop" and "undecided on 2 passes" in state.entries[-1].summary
