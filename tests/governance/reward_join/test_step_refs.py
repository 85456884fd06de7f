"""Versions by reference: each step record once per topic, flat headers, and readers that never get a
partial trajectory."""

from __future__ import annotations

import json

import pytest

from governance.config import EligibilityPolicy, ReplayConfig, RewardJoinConfig, TenantPolicy
from governance.reward_join import (
    apply_end,
    apply_reward,
    apply_step,
    build_emission,
    on_topic,
    plan_emission,
    step_payloads,
)
from governance.reward_join.transitions import mark_emitted
from sluice.events import (
    REFS_SCHEMA_VERSION,
    Trajectory,
    TrajectoryStep,
    decode,
    encode,
    encode_step_record,
    step_bytes_of,
)
from sluice.step_refs import is_step_record_key, key_trajectory_id, step_digest, step_record_key
from sluice.trajectory_refs import StepCache, StepsMissing
from tests.governance.event_builders import end, governance, reward_event, step

CFG = RewardJoinConfig(required=[], wait_s=0, combine="mean")
POLICY = EligibilityPolicy(tenants={"acme": TenantPolicy(training_opt_in=True, retention_days=90)})


class Join:
    """The join's state and stored bodies, driven by events, emitting versions on one topic."""

    def __init__(self) -> None:
        self.state = None
        self.stored: dict = {}
        self.sent: dict[str, str] = {}
        self.now = 10.0

    def feed(self, *events) -> None:
        for e in events:
            if e.event_type == "step":
                tr = apply_step(self.state, e, 1.0, CFG, POLICY)
                if tr.store_step:
                    self.stored[e.event_id] = (e, encode(e))
            elif e.event_type == "reward":
                tr = apply_reward(self.state, e, 1.0, CFG)
            else:
                tr = apply_end(self.state, e, 1.0, POLICY)
            self.state = tr.state

    def emit(self):
        self.now += 1
        plan = plan_emission(self.state, CFG, self.now)
        assert plan is not None
        steps = [self.stored[i][0] for i in self.state.stored_step_ids]
        emission = build_emission(self.state, steps, plan, CFG, POLICY, ReplayConfig(), self.now)
        out = on_topic(emission.trajectory, self.sent, step_payloads(emission.trajectory, self.stored))
        self.sent = out.sent
        decision = emission.trajectory.governance.eligibility
        self.state = mark_emitted(self.state, plan.version, decision, self.now).state
        return emission.trajectory, out


def test_payloads_computed_once_give_every_topic_what_it_would_compute_itself() -> None:
    join = Join()
    join.feed(*(step(index=i) for i in range(3)), end(), reward_event(value=1.0))
    plan = plan_emission(join.state, CFG, 11.0)
    steps = [join.stored[i][0] for i in join.state.stored_step_ids]
    trajectory = build_emission(join.state, steps, plan, CFG, POLICY, ReplayConfig(), 11.0).trajectory
    payloads = step_payloads(trajectory, join.stored)
    assert [s.event_id for s, _, _ in payloads] == join.state.step_ids
    half_sent = {join.state.step_ids[0]: payloads[0][2]}
    for sent in ({}, half_sent):
        shared, own = (
            on_topic(trajectory, sent, payloads),
            on_topic(trajectory, sent, step_payloads(trajectory, join.stored)),
        )
        assert shared.sent == own.sent and shared.header.steps_ref == own.header.steps_ref
        assert [e for e, _ in shared.step_records] == [e for e, _ in own.step_records]
        assert [step_bytes_of(b) for _, b in shared.step_records] == [
            step_bytes_of(b) for _, b in own.step_records
        ]
    assert [e for e, _ in on_topic(trajectory, half_sent, payloads).step_records] == join.state.step_ids[1:]


def wire_bytes(out) -> int:
    return sum(len(b) for _, b in out.step_records) + len(encode(out.header))


def test_steps_travel_once_and_late_rewards_send_the_header_only() -> None:
    sizes = {}
    for n in (1, 50):
        join = Join()
        join.feed(*(step(index=i) for i in range(n)), end(), reward_event(value=1.0))
        _, first = join.emit()
        assert [e for e, _ in first.step_records] == [s for s in join.state.step_ids]
        assert first.header.steps == [] and first.header.schema_version == REFS_SCHEMA_VERSION
        assert first.header.steps_ref.count == n and len(first.header.steps_ref.added) == n
        join.feed(reward_event(name="late", value=0.5))
        full, late = join.emit()
        assert late.step_records == [] and late.header.steps_ref.added == []
        assert late.header.steps_ref.digest == first.header.steps_ref.digest
        assert late.header.version == 2 and len(full.steps) == n
        sizes[n] = wire_bytes(late)
    assert sizes[50] / sizes[1] <= 1.1, sizes


def test_stored_bytes_are_shipped_as_they_are() -> None:
    join = Join()
    s0 = step(index=0)
    join.feed(s0, end(), reward_event())
    _, out = join.emit()
    ((event_id, record),) = out.step_records
    assert step_bytes_of(record) == encode(s0)  # spliced in, not encoded again
    parsed = decode(record)
    assert isinstance(parsed, TrajectoryStep) and parsed.step == s0 and parsed.version == 1
    assert key_trajectory_id(step_record_key(s0.trajectory_id, event_id)) == s0.trajectory_id


def test_a_step_records_key_is_told_from_a_headers_as_consumed_or_decoded() -> None:
    join = Join()
    s0 = step(index=0)
    join.feed(s0, end(), reward_event())
    _, out = join.emit()
    ((event_id, _),) = out.step_records
    key = step_record_key(s0.trajectory_id, event_id)
    assert is_step_record_key(key) and is_step_record_key(key.encode())
    assert not is_step_record_key(s0.trajectory_id) and not is_step_record_key(s0.trajectory_id.encode())
    assert not is_step_record_key(None) and not is_step_record_key(b"") and not is_step_record_key("")


def test_a_late_step_reward_resends_that_step_only() -> None:
    join = Join()
    join.feed(step(index=0), step(index=1), step(index=2), end(), reward_event())
    join.emit()
    join.feed(reward_event(name="helpful", value=1.0, step_index=1))
    full, out = join.emit()
    assert [e for e, _ in out.step_records] == [full.steps[1].event_id]
    assert [r.name for r in decode(out.step_records[0][1]).step.rewards] == ["helpful"]


def test_readers_inline_versions_and_refuse_partial_ones() -> None:
    join = Join()
    join.feed(step(index=1), step(index=0), end(), reward_event())
    full1, v1 = join.emit()
    join.feed(reward_event(name="helpful", value=1.0, step_index=0))
    full2, v2 = join.emit()
    cache = StepCache()
    for out in (v1, v2):
        for _, record in out.step_records:
            cache.add(decode(record))
    assert cache.resolve(v2.header).steps == full2.steps
    assert cache.resolve(v2.header).model_copy(update={"steps_ref": None, "schema_version": "1.0"}) == (
        full2.model_copy(update={"emitted_at": full2.emitted_at})
    )
    fresh = StepCache()  # started reading after v1's step records: never a partial trajectory
    for _, record in v2.step_records:
        fresh.add(decode(record))
    with pytest.raises(StepsMissing):
        fresh.resolve(v2.header)
    old = Trajectory.model_validate_json(encode(full1))  # the inline layout passes unchanged
    assert StepCache().resolve(old) == old


def test_a_dropped_version_withdraws_the_step_records() -> None:
    join = Join()
    join.feed(step(index=0), end(), reward_event())
    _, v1 = join.emit()
    join.feed(step(index=1, gov=governance(data_class="prohibited")))
    join.now += 10_000
    _, v2 = join.emit()
    assert v2.header.steps_ref.count == 0 and v2.step_records == []
    assert v2.withdrawn == [e for e, _ in v1.step_records] and v2.sent == {}


@pytest.mark.parametrize(
    ("tid", "tenant", "event_id"),
    [("acme~run-7", "acme", "e1"), ('od"d\\~\u00e9\u2028\x01', "t\u00fcnant", "\ud83d\ude00id")],
)
def test_a_step_record_is_the_json_its_fields_make_with_the_step_bytes_spliced_in(tid, tenant, event_id):
    body = encode(step(tid=tid, tenant=tenant))
    record = encode_step_record(tid, tenant, 3, event_id, body, created_at="2026-12-06T14:00:00.000001Z")
    fields = {
        "schema_version": REFS_SCHEMA_VERSION,
        "event_id": event_id,
        "trajectory_id": tid,
        "tenant": tenant,
        "created_at": "2026-12-06T14:00:00.000001Z",
        "event_type": "trajectory_step",
        "version": 3,
        "digest": step_digest(body),
    }
    assert record == json.dumps(fields, separators=(",", ":")).encode()[:-1] + b',"step":' + body + b"}"
    parsed = decode(record)
    assert isinstance(parsed, TrajectoryStep) and parsed.step.trajectory_id == tid
    assert step_bytes_of(record) == body


def test_the_step_records_of_a_version_on_a_topic_carry_one_time() -> None:
    join = Join()
    join.feed(*(step(index=i) for i in range(4)), end(), reward_event(value=1.0))
    _, out = join.emit()
    times = {json.loads(b)["created_at"] for _, b in out.step_records}
    assert len(out.step_records) == 4 and len(times) == 1
