"""Dead letters: a record a stage could not process, with the reason and its original bytes.

Reasons never quote the record's content (pydantic errors are rendered as ``field: message`` without the
offending input), so they are safe to log. The original bytes travel base64-encoded: a dead letter of the
redact stage can hold raw text, so the dead-letter topic is as sensitive as the raw topics.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypedDict, Unpack

from pydantic import ValidationError

from pipeline.stages.counters import StageCounters
from pipeline.stages.exceptions import OutputError, RejectedEvent
from pipeline.stages.outputs import send
from sluice.errors import validation_summary
from sluice.events import DeadLetter, encode

log = logging.getLogger("sluice.stages")

MAX_REASON = 2000


def describe_error(exc: BaseException) -> tuple[str, str]:
    """(reason, error type) of an exception, without the input that caused it."""
    if isinstance(exc, RejectedEvent):
        return exc.reason, exc.error_type
    if isinstance(exc, ValidationError):
        summary = validation_summary(exc)
        if summary.startswith("<root>: Invalid JSON"):
            detail = summary.split(";")[0].removeprefix("<root>: Invalid JSON").lstrip(": ")
            return f"not valid JSON: {detail}", "InvalidJSON"
        return "failed validation: " + summary, "ValidationError"
    if isinstance(exc, json.JSONDecodeError | UnicodeDecodeError):
        return f"not valid JSON: {type(exc).__name__}", type(exc).__name__
    return f"stage error: {type(exc).__name__}", type(exc).__name__


class Source(TypedDict):
    """Where a dead-lettered record came from, and its original bytes (offsets None: built by the stage)."""

    source_topic: str
    source_partition: int | None
    source_offset: int | None
    key: bytes | None
    value: bytes | None


def build_dead_letter(stage: str, reason: str, error_type: str, **source: Unpack[Source]) -> DeadLetter:
    """A stage's dead letter: ``DeadLetter.of`` with the reason cut to ``MAX_REASON`` characters."""
    return DeadLetter.of(
        stage,
        reason[:MAX_REASON],
        error_type,
        source_topic=source["source_topic"],
        source_partition=source["source_partition"],
        source_offset=source["source_offset"],
        key=source["key"],
        original=source["value"],
    )


def dead_letter_for(stage: str, exc: BaseException, **source: Unpack[Source]) -> DeadLetter:
    """The dead letter of a record that raised ``exc`` (the reason never quotes the record)."""
    reason, error_type = describe_error(exc)
    return build_dead_letter(stage, reason, error_type, **source)


@dataclass
class Caught:
    """What ``DeadLetterSender.catching`` did with its block: the dead letter it sent, if any."""

    letter: DeadLetter | None = None


class DeadLetterSender:
    """One stage's way to the dead-letter topic: builds, logs, publishes and counts its dead letters."""

    def __init__(self, stage: str, out_topic: Any, counters: StageCounters) -> None:
        self.stage = stage
        self.out_topic = out_topic
        self.counters = counters

    async def reject(
        self,
        exc: BaseException,
        topic: str,
        partition: int,
        offset: int,
        key: bytes | None,
        value: bytes | None,
    ) -> DeadLetter:
        """Dead-letter a record the stage could not process: log it (a rejection is a warning, anything
        else an error), publish it and count it."""
        letter = dead_letter_for(
            self.stage,
            exc,
            source_topic=topic,
            source_partition=partition,
            source_offset=offset,
            key=key,
            value=value,
        )
        level = logging.WARNING if isinstance(exc, RejectedEvent) else logging.ERROR
        log.log(level, "%s dead-lettered %s[%d]@%d: %s", self.stage, topic, partition, offset, letter.reason)
        await self.publish(letter, key)
        self.counters.inc("deadlettered")
        return letter

    @asynccontextmanager
    async def catching(
        self, topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None
    ) -> AsyncIterator[Caught]:
        """Handle one record in the block: whatever it raises is dead-lettered (``reject``), so a poison
        record never kills the agent, except an ``OutputError``, which leaves the record unacknowledged."""
        caught = Caught()
        try:
            yield caught
        except OutputError:
            raise
        except Exception as exc:
            caught.letter = await self.reject(exc, topic, partition, offset, key, value)

    async def publish(self, letter: DeadLetter, key: bytes | None) -> None:
        """Publish a dead letter the stage built itself (keyed like its record)."""
        await send(self.out_topic, key=key, value=encode(letter))
