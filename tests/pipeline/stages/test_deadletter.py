"""Dead letters: reason, error type, source coordinates, original bytes — never the content in the reason."""

from __future__ import annotations

import asyncio
import base64

import pytest

from pipeline.stages.codec import check_key, decode_event
from pipeline.stages.counters import StageCounters
from pipeline.stages.deadletter import Caught, DeadLetterSender, dead_letter_for
from pipeline.stages.exceptions import OutputError, RejectedEvent
from sluice.events import DeadLetter, RewardEvent, StepEvent, decode, encode
from tests.governance.event_builders import reward_event, step


def letter_for(value: bytes, allowed=(StepEvent,), key: bytes | None = b"traj-1") -> DeadLetter:
    with pytest.raises(RejectedEvent) as info:
        event = decode_event(value, allowed)
        check_key(key, event.trajectory_id)
    return dead_letter_for(
        "redact",
        info.value,
        source_topic="p.steps.raw",
        source_partition=1,
        source_offset=42,
        key=key,
        value=value,
    )


def test_bad_json() -> None:
    dl = letter_for(b"{not json")
    assert dl.reason.startswith("not valid JSON: ")
    assert dl.error_type == "InvalidJSON"
    assert (dl.stage, dl.source_topic, dl.source_partition, dl.source_offset, dl.key) == (
        "redact",
        "p.steps.raw",
        1,
        42,
        "traj-1",
    )
    assert base64.b64decode(dl.original_b64) == b"{not json"
    assert decode(encode(dl)) == dl


def test_failed_validation_does_not_quote_the_input() -> None:
    secret = "alice@example.com"
    bad = (
        b'{"event_type":"step","trajectory_id":"traj-1","tenant":"acme","step_index":"'
        + secret.encode()
        + b'"}'
    )
    dl = letter_for(bad)
    assert dl.error_type == "ValidationError"
    assert "step_index" in dl.reason
    assert secret not in dl.reason


def test_wrong_type_wrong_key_no_key_empty() -> None:
    assert "unexpected event type RewardEvent" in letter_for(encode(reward_event())).reason
    assert letter_for(encode(step()), key=b"other").reason == "record key does not match its trajectory_id"
    assert letter_for(encode(step()), key=None).error_type == "BadKey"
    with pytest.raises(RejectedEvent, match="empty record"):
        decode_event(None, (StepEvent,))


def test_good_event_passes() -> None:
    s = step()
    assert decode_event(encode(s), (StepEvent, RewardEvent)) == s
    check_key(b"traj-1", s.trajectory_id)


def test_unexpected_exception_names_only_its_type() -> None:
    dl = dead_letter_for(
        "reward_join",
        KeyError("alice@example.com"),
        source_topic="t",
        source_partition=0,
        source_offset=0,
        key=None,
        value=b"x",
    )
    assert (dl.reason, dl.error_type, dl.key) == ("stage error: KeyError", "KeyError", None)


class _Topic:
    """A stand-in output topic: keeps what is sent, acknowledged at once."""

    def __init__(self) -> None:
        self.sent: list[tuple[bytes | None, bytes | None]] = []

    async def send(self, *, key: bytes | None, value: bytes | None, partition: int | None) -> asyncio.Future:
        self.sent.append((key, value))
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut

    def get_topic_name(self) -> str:
        return "dl"


def test_catching_dead_letters_what_the_block_raises_but_an_output_error() -> None:
    topic, counters = _Topic(), StageCounters()
    sender = DeadLetterSender("join", topic, counters)

    async def run(exc: Exception | None) -> Caught:
        async with sender.catching("in", 1, 5, b"t1", b"{}") as caught:
            if exc is not None:
                raise exc
        return caught

    assert asyncio.run(run(None)).letter is None and topic.sent == []
    letter = asyncio.run(run(RejectedEvent("no", "Nope"))).letter
    assert letter is not None and (letter.reason, letter.error_type, letter.source_offset) == (
        "no",
        "Nope",
        5,
    )
    assert topic.sent == [(b"t1", encode(letter))] and counters.counts["deadlettered"] == 1
    with pytest.raises(OutputError):
        asyncio.run(run(OutputError("broker gone")))
    assert len(topic.sent) == 1 and counters.counts["deadlettered"] == 1
