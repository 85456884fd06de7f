"""EvolutionPublisher on the real broker: acknowledged writes, the latest assignment per scope, clear errors."""

from __future__ import annotations

import time

import pytest

from app.config import SluiceConfig
from infra.broker import free_port
from pipeline.evolve.exceptions import PublishError
from pipeline.evolve.publish import EvolutionPublisher
from sluice.broker_config import BrokerConfig
from sluice.evolution import LedgerEntry, MemoryEntry, Overlay, OverlayAssignment
from sluice.topics_config import TopicsConfig
from tests.kafka_helpers import read_topic


def assignment(tenant: str, task: str | None, name: str, share: float = 0.0) -> OverlayAssignment:
    ov = Overlay(overlay_id=name, tenant=tenant, task_id=task, memory=[MemoryEntry(text=name)])
    return OverlayAssignment(
        tenant=tenant, task_id=task, active=ov, candidate=ov if share else None, canary_share=share
    )


def test_record_and_assign_are_on_their_topics_and_the_latest_assignment_wins(config: SluiceConfig) -> None:
    entry = LedgerEntry(
        proposal_id="pr-1", kind="proposal", surface="memory", tenant="acme", evidence={"n": 3}
    )
    with EvolutionPublisher(config.broker, config.topics) as pub:
        assert pub.read_assignments() == {}
        pub.record(entry)
        pub.assign(assignment("acme", None, "v1"))
        pub.assign(assignment("acme", "refunds", "r1"))
        pub.assign(assignment("globex", None, "g1"))
        latest = assignment("acme", None, "v2", share=0.25)
        pub.assign(latest)
        got = pub.read_assignments()
    assert set(got) == {"acme/*", "acme/refunds", "globex/*"}
    assert got["acme/*"] == latest
    assert got["acme/refunds"].active.overlay_id == "r1"
    ((key, value),) = read_topic(config.broker, config.topics.name("ledger"), 1, idle_s=0.3)
    assert key == b"pr-1"
    assert LedgerEntry.model_validate_json(value) == entry


def test_an_unreachable_broker_is_a_clear_error_not_a_silent_change() -> None:
    broker = BrokerConfig(bootstrap_servers=f"127.0.0.1:{free_port()}", profile="tansu", embedded=False)
    pub = EvolutionPublisher(broker, TopicsConfig(prefix="nowhere."), timeout_s=1.5)
    entry = LedgerEntry(proposal_id="pr-1", kind="proposal", surface="memory", tenant="acme")
    started = time.monotonic()
    with pytest.raises(PublishError, match="not acknowledged|refused"):
        pub.record(entry)
    assert time.monotonic() - started < 10
    with pytest.raises(PublishError):
        pub.read_assignments(timeout_s=1.0)
