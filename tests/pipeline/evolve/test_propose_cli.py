"""End to end: a real DuckDB store filled through the sink's write path with scripted tenants' planted
failures, then ``sluice evolve propose`` finds each one with the right surface, drafts the fixes, and
with ``--record`` puts every proposal in the ledger on the real broker, editing the active overlays."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from app.cli import cli
from infra.broker import LocalBroker
from pipeline.evolve.publish import EvolutionPublisher
from sluice.evolution import LedgerEntry, MemoryEntry, Overlay, OverlayAssignment
from tests.kafka_helpers import read_topic
from tests.pipeline.evolve.conftest import ECHO_KEY
from tests.pipeline.evolve.fleet import fill_store, fleet
from tests.sinks.helpers import ACME_KEY, write_config

PLANTED = {
    ("acme", "promo", None, "memory"),
    ("globex", "booking", "book_meeting", "tool_schema"),
    ("globex", "weather", "get_weather", "harness"),
    (None, "arith", None, "weights"),
    ("hooli", None, None, "noop"),
}


def _store(broker: LocalBroker, tmp_path: Path) -> tuple[Path, object]:
    path, cfg = write_config(broker, tmp_path)
    fill_store(cfg.path(cfg.sink.database), fleet())
    return path, cfg


def test_propose_finds_the_planted_failures(broker: LocalBroker, tmp_path: Path) -> None:
    path, _ = _store(broker, tmp_path)
    res = CliRunner().invoke(cli, ["evolve", "propose", "--config", str(path), "--format", "json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    clusters = out["diagnosis"]["clusters"]
    assert {(c["tenant"], c["task_id"], c["tool"], c["surface"]) for c in clusters} == PLANTED
    for c in clusters:  # every cluster carries the SQL it came from and a significance test
        assert any("FROM trajectories" in e["query"] for e in c["evidence"])
        assert c["evidence"][0]["numbers"]["p_value"] < 0.05 and c["reason"]
    by_scope = {(p["tenant"], p["task_id"]): p for p in out["proposals"]}
    assert set(by_scope) == {("acme", "promo"), ("globex", "booking"), ("globex", "weather")}
    assert "SPRING24" in by_scope["acme", "promo"]["candidate"]["memory"][0]["text"]
    (change,) = by_scope["globex", "booking"]["candidate"]["tools"]
    date = change["parameters"]["properties"]["date"]
    assert re.fullmatch(date["pattern"], "2026-05-01") and not re.fullmatch(date["pattern"], "05/01/2026")
    assert "`weather_lookup`" in by_scope["globex", "weather"]["candidate"]["harness_add"][0]["text"]
    assert set(out["queries"]) == {"trajectories", "feedback", "tool_calls", "declared_tools"}

    text = CliRunner().invoke(cli, ["evolve", "propose", "--config", str(path), "--show-dismissed"])
    assert text.exit_code == 0, text.output
    assert "surface=memory  tenant=acme task=promo" in text.output
    assert "surface=tool_schema  tenant=globex task=booking tool=book_meeting" in text.output
    assert "+ memory: The promo code this month is SPRING24." in text.output
    assert re.search(r"evidence: two_proportion_z stat=[\d.]+ p=[\d.e-]+", text.output)
    assert "dismissed" in text.output and "tenant=hooli task=chat: too little evidence" in text.output

    # a tenant's key reads its own rows only, so it sees its own cluster only
    own = CliRunner().invoke(
        cli, ["evolve", "propose", "--config", str(path), "--api-key", ACME_KEY, "--format", "json"]
    )
    assert own.exit_code == 0, own.output
    mine = json.loads(own.output)["diagnosis"]["clusters"]
    assert [(c["tenant"], c["task_id"], c["surface"]) for c in mine] == [("acme", "promo", "memory")]


def test_a_configured_model_drafts_too(broker: LocalBroker, tmp_path: Path, echo_url: str) -> None:
    path, _ = _store(broker, tmp_path)
    args = ["evolve", "propose", "--config", str(path), "--model-base-url", echo_url, "--model", "echo-1"]
    res = CliRunner().invoke(cli, [*args, "--format", "json"], env={"SLUICE_EVOLVE_MODEL_API_KEY": ECHO_KEY})
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    drafted = {
        (p["tenant"], p["task_id"], p["surface"]) for p in out["proposals"] if p["proposer"] == "model:echo-1"
    }
    # the model drafts for the memory and both tool clusters; the rule proposers' drafts stay
    assert drafted == {
        ("acme", "promo", "memory"),
        ("globex", "booking", "harness"),
        ("globex", "weather", "harness"),
    }
    assert len(out["proposals"]) == 6
    denied = CliRunner().invoke(cli, args)  # without the backend's key: no model drafts, and the reason
    assert denied.exit_code == 0 and "bad output" not in denied.output
    assert "note: model on" in denied.output and "HTTP 401" in denied.output


def test_record_puts_each_proposal_in_the_ledger(broker: LocalBroker, tmp_path: Path) -> None:
    path, cfg = _store(broker, tmp_path)
    publisher = EvolutionPublisher(cfg.broker, cfg.topics)
    active = Overlay(
        tenant="acme", task_id="promo", version=2, memory=[MemoryEntry(text="Support hours are 9-17.")]
    )
    publisher.assign(OverlayAssignment(tenant="acme", task_id="promo", active=active))
    publisher.close()

    res = CliRunner().invoke(cli, ["evolve", "propose", "--config", str(path), "--record"])
    assert res.exit_code == 0, res.output
    recorded = re.findall(r"recorded (pr-\w+) as ledger entry (\w+)", res.output)
    assert len(recorded) == 3
    entries = [
        LedgerEntry.model_validate_json(v) for _, v in read_topic(cfg.broker, cfg.topics.name("ledger"), 3)
    ]
    assert sorted((e.proposal_id, e.entry_id) for e in entries) == sorted(recorded)
    assert {e.kind for e in entries} == {"proposal"}
    assert {e.surface for e in entries} == {"memory", "tool_schema", "harness"}
    for e in entries:
        cluster = e.evidence["cluster"]
        assert cluster["evidence"] and e.diff["candidate"]["overlay_id"] == e.overlay_id and e.summary
    memory = next(e for e in entries if e.surface == "memory")
    # the candidate edits the active overlay of its scope: a new version that keeps what it had
    assert memory.previous_overlay_id == active.overlay_id
    assert (
        memory.diff["candidate"]["parent_id"] == active.overlay_id
        and memory.diff["candidate"]["version"] == 3
    )
    assert [m["text"] for m in memory.diff["candidate"]["memory"]][0] == "Support hours are 9-17."
