"""The governance stages end to end: real broker, real Faust worker subprocess, real Presidio.

One worker serves every scenario of this module (worker start and group join take seconds):
PII canaries, placeholders stable across steps, an early reward, a late reward (version 2), a
never-rewarded trajectory, an idle-ended one, an audit-only tenant, a dropped trajectory, poison records.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from app.config import SluiceConfig
from app.status import scrape
from infra.broker import LocalBroker, free_port
from pipeline.stages.names import changelog_topics
from pipeline.topics import create_topics
from sluice.events import (
    REFS_SCHEMA_VERSION,
    DeadLetter,
    StepEvent,
    Trajectory,
    decode,
    utcnow,
)
from tests.conftest import make_config
from tests.governance.event_builders import end, governance, reward_event
from tests.governance.event_builders import step as _step
from tests.pipeline.stages.stage_helpers import (
    StageWorker,
    TopicTail,
    producer,
    send,
    versions_inline,
    write_config,
)

pytestmark = pytest.mark.slow


def step(*args: Any, **kwargs: Any) -> StepEvent:
    """A step created now: the worker judges retention by its own clock."""
    return _step(*args, created_at=utcnow(), **kwargs)


CANARIES = [
    "canary.alice@example.com",
    "+1 212-555-0143",
    "4111 1111 1111 1111",
    "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd",
    "203.0.113.77",
]


@dataclass
class Run:
    cfg: SluiceConfig
    worker: StageWorker
    redacted: list[bytes] = field(default_factory=list)
    audited: list[Trajectory] = field(default_factory=list)
    train: list[Trajectory] = field(default_factory=list)
    deadletters: list[DeadLetter] = field(default_factory=list)
    raw_outputs: dict[str, list[bytes]] = field(default_factory=dict)
    exit_code: int | None = None
    metrics: dict[str, float] | str = "not scraped"
    mapped_files: set[str] = field(default_factory=set)

    def versions(self, tid: str, topic: str = "audited") -> dict[int, Trajectory]:
        return {t.version: t for t in getattr(self, topic) if t.trajectory_id == tid}


def trajectories(values: list[bytes]) -> list[Trajectory]:
    out = versions_inline(values)
    assert all(t.schema_version == REFS_SCHEMA_VERSION for t in out)
    return out


def pii_steps(tid: str) -> list[StepEvent]:
    texts = [
        f"Hi, I am Alice, mail me at {CANARIES[0]} or call {CANARIES[1]}",
        f"My card is {CANARIES[2]} and my key is {CANARIES[3]}",
        f"Again: {CANARIES[0]}, from {CANARIES[4]}",
    ]
    return [step(tid, i, text=t) for i, t in enumerate(texts)]


@pytest.fixture(scope="module")
def run(broker: LocalBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    tmp = tmp_path_factory.mktemp("stages-e2e")
    cfg = make_config(
        broker,
        tmp,
        rewards={"required": ["score"], "wait_s": 4, "idle_end_s": 6, "tick_s": 0.5, "combine": "mean"},
        eligibility={
            "tenants": {"acme": {"training_opt_in": True}, "globex": {"training_opt_in": False}},
        },
        stages={"stats_interval_s": 5, "web_port": free_port()},
    )
    create_topics(cfg.broker, cfg.topics)
    worker = StageWorker(write_config(cfg, tmp / "sluice.yaml"), tmp / "stages.log").start()
    audited = TopicTail(cfg, cfg.topics.name("trajectories_audited"))
    p = producer(cfg)
    try:
        # early reward: before the first step of its trajectory
        send(p, cfg, "rewards_raw", reward_event("early", value=0.25))
        p.flush()
        for s in pii_steps("pii"):
            send(p, cfg, "steps_raw", s)
        send(p, cfg, "steps_raw", end("pii"))
        send(p, cfg, "rewards_raw", reward_event("pii", value=0.5, critique=f"{CANARIES[0]} was helped"))
        for tid in ("early", "late", "never"):
            send(p, cfg, "steps_raw", step(tid, 0))
            send(p, cfg, "steps_raw", step(tid, 1))
            send(p, cfg, "steps_raw", end(tid))
        for i in range(2):  # idle: no end event, rewarded; ends by idleness
            send(p, cfg, "steps_raw", step("idle", i))
        send(p, cfg, "rewards_raw", reward_event("idle", value=1.0))
        send(p, cfg, "steps_raw", step("globex", 0, tenant="globex"))
        send(p, cfg, "steps_raw", end("globex", tenant="globex"))
        send(p, cfg, "rewards_raw", reward_event("globex", tenant="globex"))
        send(p, cfg, "steps_raw", step("dropped", 0, text=f"secret {CANARIES[0]}"))
        send(p, cfg, "steps_raw", step("dropped", 1, gov=governance(data_class="prohibited")))
        send(p, cfg, "steps_raw", end("dropped"))
        send(p, cfg, "rewards_raw", reward_event("dropped", critique=f"about {CANARIES[1]}"))
        # poison: bad JSON, failed validation, a key that is not the trajectory id
        send(p, cfg, "steps_raw", b"{this is not json " + CANARIES[0].encode(), key="poison-1")
        send(p, cfg, "rewards_raw", b'{"event_type":"reward","trajectory_id":"x","tenant":"a"}', key="x")
        send(p, cfg, "steps_raw", step("mis-keyed", 0), key="some-other-key")
        p.flush()

        def has(tid: str, version: int):
            return lambda values: any(f'"event_id":"{tid}:v{version}"'.encode() in v for v in values)

        audited.wait_until(has("late", 1), timeout_s=90)
        send(p, cfg, "rewards_raw", reward_event("late", value=0.75))
        p.flush()
        for tid, version in [
            ("late", 2),
            ("idle", 1),
            ("pii", 1),
            ("early", 1),
            ("never", 1),
            ("globex", 1),
            ("dropped", 1),
        ]:
            audited.wait_until(has(tid, version), timeout_s=60)
        audited.poll(2.0)  # anything emitted by mistake shows up now
        r = Run(cfg, worker, audited=trajectories(audited.values()))
        names = {k: cfg.topics.name(k) for k in ("steps_redacted", "trajectories_train", "deadletter")}
        tail = TopicTail(cfg, *names.values(), *changelog_topics(cfg.topics, cfg.stages))
        tail.drain()
        tail.close()
        r.raw_outputs = {t: tail.keys(t) + tail.values(t) for t in tail.topics}
        r.raw_outputs[audited.topics[0]] = audited.values()
        r.redacted = tail.values(names["steps_redacted"])
        r.train = trajectories(tail.values(names["trajectories_train"]))
        r.deadletters = [decode(v) for v in tail.values(names["deadletter"])]  # type: ignore[misc]
        r.metrics = scrape(f"http://127.0.0.1:{cfg.stages.web_port}/metrics")
        assert worker.proc is not None
        maps = Path(f"/proc/{worker.proc.pid}/maps").read_text().splitlines()
        r.mapped_files = {line.split()[-1] for line in maps if len(line.split()) >= 6}
        r.exit_code = worker.terminate()
        yield r
    finally:
        audited.close()
        worker.stop()


def test_no_pii_canary_leaves_the_raw_topics(run: Run) -> None:
    assert len(run.raw_outputs) == 8  # redacted, audited, train, deadletter, 4 changelogs
    for topic, values in run.raw_outputs.items():
        if topic.endswith("deadletter"):
            continue  # holds the original bytes of poison records by design
        if topic.endswith("erasure_rules-changelog"):
            assert values == [], topic  # no erasure in this run
            continue
        blob = b"\n".join(v or b"" for v in values)
        assert blob, f"{topic} is empty"
        for canary in CANARIES:
            assert canary.encode() not in blob, f"{canary!r} leaked to {topic}"


def test_placeholders_are_stable_across_steps_and_rewards(run: Run) -> None:
    traj = run.versions("pii")[1]
    texts = [s.observation.messages[-1].content for s in traj.steps]
    assert "<EMAIL_ADDRESS_1>" in texts[0] and "<EMAIL_ADDRESS_1>" in texts[2]
    assert "<PHONE_NUMBER_1>" in texts[0]
    assert "<CREDIT_CARD_1>" in texts[1]
    assert traj.rewards[0].critique == "<EMAIL_ADDRESS_1> was helped"
    assert traj.governance.redaction == "redacted"
    assert traj.governance.redaction_report.entities["EMAIL_ADDRESS"] == 2
    assert all(s.governance.redaction == "redacted" for s in traj.steps)
    assert len(run.redacted) >= 3


def test_every_trajectory_reaches_audited_with_governance(run: Run) -> None:
    for tid in ("pii", "early", "late", "never", "idle", "globex", "dropped"):
        v1 = run.versions(tid)[1]
        assert v1.event_id == f"{tid}:v1"
        gov = v1.governance
        assert gov.eligibility is not None and gov.eligibility.policy_version
        assert gov.replay is not None and gov.replay.reasons
    pii = run.versions("pii")[1]
    assert (pii.rewarded, pii.reward, pii.status, len(pii.steps)) == (True, 0.5, "ended", 3)
    assert pii.governance.eligibility.decision == "train"
    assert pii.governance.replay.grade == "deterministic"


def test_early_reward_joins(run: Run) -> None:
    assert set(run.versions("early")) == {1}
    early = run.versions("early")[1]
    assert (early.rewarded, early.reward, len(early.steps)) == (True, 0.25, 2)
    assert set(run.versions("early", "train")) == {1}


def test_late_reward_makes_version_2(run: Run) -> None:
    v = run.versions("late")
    assert set(v) == {1, 2}
    assert (v[1].rewarded, v[1].reward) == (False, None)
    assert (v[2].rewarded, v[2].reward) == (True, 0.75)
    assert [s.event_id for s in v[1].steps] == [s.event_id for s in v[2].steps]
    assert set(run.versions("late", "train")) == {2}
    # each step travels once per topic: version 2 sent its header only on the audited topic
    audited = run.raw_outputs[run.cfg.topics.name("trajectories_audited")]
    step_records = [r for r in audited if b'"trajectory_step"' in r and b'"trajectory_id":"late"' in r]
    assert len(step_records) == 2 and v[2].steps_ref.added == [] and v[2].steps_ref.count == 2


def test_never_rewarded_is_emitted_unrewarded_after_wait(run: Run) -> None:
    v = run.versions("never")
    assert set(v) == {1}
    assert (v[1].rewarded, v[1].status, len(v[1].steps)) == (False, "ended", 2)
    assert not run.versions("never", "train")


def test_idle_trajectory_times_out(run: Run) -> None:
    v = run.versions("idle")
    assert set(v) == {1}
    assert (v[1].status, v[1].rewarded, v[1].reward) == ("timed_out", True, 1.0)


def test_audit_only_and_dropped_stay_off_train(run: Run) -> None:
    globex = run.versions("globex")[1]
    assert globex.governance.eligibility.decision == "audit_only"
    assert globex.steps
    dropped = run.versions("dropped")
    assert set(dropped) == {1}
    assert dropped[1].steps == [] and dropped[1].rewards == []
    assert dropped[1].governance.eligibility.reasons == ["data_class_dropped:prohibited"]
    train_ids = {t.trajectory_id for t in run.train}
    assert train_ids == {"pii", "early", "late", "idle"}


def test_the_train_decision_travels_with_every_audited_version(run: Run) -> None:
    assert all(t.train_blockers is not None for t in run.audited)
    trainable = {(t.trajectory_id, t.version) for t in run.audited if t.train_blockers == []}
    assert trainable == {(t.trajectory_id, t.version) for t in run.train}
    assert all(t.train_blockers == [] for t in run.train)
    assert run.versions("late")[1].train_blockers == ["unrewarded"]
    assert "eligibility:audit_only" in run.versions("globex")[1].train_blockers
    assert "eligibility:drop" in run.versions("dropped")[1].train_blockers


def test_poison_records_are_dead_lettered_with_reasons(run: Run) -> None:
    by_key = {d.key: d for d in run.deadletters}
    bad_json = by_key["poison-1"]
    assert bad_json.stage == "redact" and bad_json.error_type == "InvalidJSON"
    assert bad_json.source_topic == run.cfg.topics.name("steps_raw") and bad_json.source_offset is not None
    assert base64.b64decode(bad_json.original_b64).startswith(b"{this is not json")
    invalid = by_key["x"]
    assert invalid.error_type == "ValidationError" and "reward: Field required" in invalid.reason
    assert by_key["some-other-key"].reason == "record key does not match its trajectory_id"
    assert len(run.deadletters) == 3


def test_worker_stops_cleanly_on_sigterm(run: Run) -> None:
    assert run.exit_code == 0


def test_metrics_page_for_sluice_status(run: Run) -> None:
    assert isinstance(run.metrics, dict), run.metrics
    assert run.metrics["sluice_stages_dead_letters_total"] == 3
    assert run.metrics["sluice_stages_emitted_total"] >= 8
    assert run.metrics["sluice_stages_processed_total"] > 0
    assert "sluice_stages_pending_joins" in run.metrics


def test_the_worker_never_loads_torch(run: Run) -> None:
    """Presidio imports transformers and torch for engines the stages never build; the worker keeps them
    out (``sluice stages``), and still redacted every canary above. A loaded torch maps its libraries."""
    assert run.mapped_files, "the worker's memory map was not read"
    assert any("rocksdict" in f or "pydantic_core" in f for f in run.mapped_files)  # the map is the worker's
    torch_libs = sorted(f for f in run.mapped_files if "/torch/" in f or "/transformers/" in f)
    assert torch_libs == []
