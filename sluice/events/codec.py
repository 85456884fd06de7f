"""Events on the wire: compact JSON without nulls (``encode``), parsed back by ``event_type``
(``decode``), and the JSON Schema of them all (``json_schema``).

    sluice schema            # prints the JSON Schema of every event
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field, TypeAdapter

from sluice.events.base import SCHEMA_VERSION
from sluice.events.records import DeadLetter, ErasureEvent
from sluice.events.step import StepEvent
from sluice.events.trajectory import RewardEvent, Trajectory, TrajectoryEndEvent, TrajectoryStep

AnyEvent = Annotated[
    StepEvent | TrajectoryEndEvent | RewardEvent | Trajectory | TrajectoryStep | DeadLetter | ErasureEvent,
    Field(discriminator="event_type"),
]
_ANY = TypeAdapter(AnyEvent)


def encode(event: BaseModel) -> bytes:
    """Wire form: compact JSON without nulls (``model_dump_json(exclude_none=True)`` as UTF-8 bytes, taken
    straight from pydantic-core's serialiser without the decode to ``str`` and encode back)."""
    return event.__pydantic_serializer__.to_json(event, exclude_none=True)


def decode(
    data: bytes | str,
) -> StepEvent | TrajectoryEndEvent | RewardEvent | Trajectory | TrajectoryStep | DeadLetter | ErasureEvent:
    """Parse any event by its ``event_type``; raises ``pydantic.ValidationError`` on bad input."""
    return _ANY.validate_json(data)


def json_schema() -> dict[str, Any]:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"Sluice events v{SCHEMA_VERSION}",
        **_ANY.json_schema(),
    }
