"""End to end through the real broker: raw steps in, Redactor with table-style JSON state, redacted out.

The Faust redact stage (pipeline/stages) is the production adapter; this test checks the decision
logic's contract over the wire: what comes back from the redacted topic decodes, carries no raw value,
and keeps placeholders stable across the steps of each trajectory, with the state kept only as JSON
bytes between events (as in a Faust table and its changelog).
"""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from app.config import SluiceConfig
from governance.redaction import PlaceholderState, Redactor
from sluice.events import Message, Observation, StepEvent, decode, encode
from tests.kafka_helpers import read_topic

PEOPLE = {"traj-a": ("ann@example.com", "+44 20 7946 0958"), "traj-b": ("ben@example.org", "(415) 867-5309")}


def _steps(tid: str) -> list[StepEvent]:
    email, phone = PEOPLE[tid]
    texts = [f"I am {email}", f"call {phone}", f"again: {email} / {phone}"]
    return [
        StepEvent(trajectory_id=tid, tenant="acme", step_index=i,
                  observation=Observation(messages=[Message(role="user", content=t)], prefix_message_count=i))
        for i, t in enumerate(texts)
    ]  # fmt: skip


@pytest.mark.slow
def test_redaction_over_the_broker(config: SluiceConfig, plain: Redactor) -> None:
    raw_topic, out_topic = config.topics.name("steps_raw"), config.topics.name("steps_redacted")
    producer = Producer(config.broker.producer_config())
    for tid in PEOPLE:
        for step in _steps(tid):
            producer.produce(raw_topic, key=tid.encode(), value=encode(step))
    assert producer.flush(30) == 0

    table: dict[bytes, bytes] = {}
    for key, value in read_topic(config.broker, raw_topic, expect=6):
        event = decode(value)
        stored = table.get(key)
        state = PlaceholderState.model_validate_json(stored) if stored else None
        redacted, new_state = plain.redact_event(event, state)
        table[key] = new_state.model_dump_json().encode()
        producer.produce(out_topic, key=key, value=encode(redacted))
    assert producer.flush(30) == 0

    records = read_topic(config.broker, out_topic, expect=6)
    wire = b"".join(v for _, v in records) + b"".join(table.values())
    for email, phone in PEOPLE.values():
        assert email.encode() not in wire and phone.encode() not in wire
    by_tid: dict[str, dict[int, str]] = {}
    for key, value in records:
        step = decode(value)
        assert isinstance(step, StepEvent) and step.governance.redaction == "redacted"
        by_tid.setdefault(key.decode(), {})[step.step_index] = step.observation.messages[0].content
    for texts in by_tid.values():
        assert texts == {
            0: "I am <EMAIL_ADDRESS_1>",
            1: "call <PHONE_NUMBER_1>",
            2: "again: <EMAIL_ADDRESS_1> / <PHONE_NUMBER_1>",
        }
