"""Build the loop from a config: the store client, the publisher, the evaluation backend, the ledger."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pipeline.evolve.backend import EvalClient
from pipeline.evolve.ledger_state import read_ledger
from pipeline.evolve.publish import EvolutionPublisher
from pipeline.evolve.runner import EvolveRunner
from pipeline.evolve.settings import EvolveSettings
from sinks.clients import connect_client
from sluice.policy_client import PolicyFleet


@contextmanager
def open_runner(cfg: EvolveSettings, actor: str = "sluice-evolve") -> Iterator[EvolveRunner]:
    client = connect_client(cfg.store, None)
    publisher = EvolutionPublisher(cfg.broker, cfg.topics, cfg.evolve.ack_timeout_s)
    eval_client = EvalClient(cfg.proxy, cfg.evolve.eval)
    try:
        yield EvolveRunner(
            cfg.evolve,
            client,
            publisher,
            eval_client,
            read_entries=lambda: read_ledger(cfg.broker, cfg.topics, cfg.evolve.ack_timeout_s),
            actor=actor,
            fleet=PolicyFleet(cfg.policy_servers, cfg.evolve.eval.timeout_s) if cfg.policy_servers else None,
        )
    finally:
        eval_client.close()
        publisher.close()
        client.close()
