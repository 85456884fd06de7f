"""Sending stage outputs so that a failed delivery can never be acknowledged as processed.

Faust acknowledges a record as soon as the agent moves past it (even when the loop is left by an
exception), and commits acknowledged offsets after flushing the producer. A delivery that fails must
therefore stop the worker before that commit: ``send`` attaches a callback that exits the process at
once (like a crash: nothing more is acknowledged, the records are processed again after the restart),
and ``delivered`` / ``deliver_all`` wait for the broker's acknowledgement and raise ``OutputError`` so the
caller can do the same. Exit code ``EXIT_OUTPUT_FAILED``.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from pipeline.stages.exceptions import OutputError

log = logging.getLogger("sluice.stages")
EXIT_OUTPUT_FAILED = 70


def exit_now(reason: str) -> None:
    log.critical("stopping the worker without acknowledging its input: %s", reason)
    logging.shutdown()
    os._exit(EXIT_OUTPUT_FAILED)


def _check(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled() and fut.exception() is not None:
        exit_now(f"delivery failed: {type(fut.exception()).__name__}")


async def send(topic: Any, *, key: bytes | None, value: bytes | None, partition: int | None = None) -> Any:
    """Queue a record; the process exits if the broker never takes it."""
    try:
        fut = await topic.send(key=key, value=value, partition=partition)
    except Exception as exc:
        raise OutputError(
            f"could not queue a record for {topic.get_topic_name()}: {type(exc).__name__}"
        ) from exc
    fut.add_done_callback(_check)
    return fut


Sent = tuple[Any, "asyncio.Future[Any]"]  # (topic, delivery future) of a queued record


async def send_all(records: list[tuple[Any, bytes | None, bytes | None, int | None]]) -> list[Sent]:
    """Queue ``(topic, key, value, partition)`` records; their topics and delivery futures."""
    return [(topic, await send(topic, key=key, value=value, partition=p)) for topic, key, value, p in records]


async def delivered(sent: list[Sent]) -> None:
    """Wait until the broker acknowledged every record of ``sent``; ``OutputError`` if one failed."""
    for topic, fut in sent:
        try:
            await fut
        except Exception as exc:
            raise OutputError(f"delivery to {topic.get_topic_name()} failed: {type(exc).__name__}") from exc


async def deliver_all(records: list[tuple[Any, bytes | None, bytes | None, int | None]]) -> None:
    """Send ``records`` together, then wait until the broker acknowledged every one (one round trip for
    all, not one each)."""
    await delivered(await send_all(records))
