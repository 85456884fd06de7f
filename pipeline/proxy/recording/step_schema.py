"""What the step event's models accept, read from the models once at import, for the publishing fast path
(``step_event.step_event_bytes``): the sampling fields in their declared order with a check of each one's
exact type, the values of the ``Literal`` fields it fills, the bounds of its constrained counts, and how
the models write a float that is not finite.

Read rather than restated, so that a field added, retyped, narrowed or bounded in ``sluice.events`` changes
what the fast path lets through with it: a value the model would coerce or refuse goes to the model path.
A type or constraint these readers do not know sends every value of that field to the model path; a field
read as a ``Literal`` that stops being one fails the import (the fast path would need another check).

    pytest tests/pipeline/proxy/recording/test_step_schema.py
"""

from __future__ import annotations

import operator
import types
from collections.abc import Callable
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel

from sluice.events.step import Action, GenAIAttributes, Observation, SamplingParams, StepEvent, StepMetadata

Check = Callable[[Any], bool]
"""Whether a value is one the field keeps as it is (no coercion, no refusal)."""

_NONE = type(None)
_BOUNDS: dict[type, tuple[str, Callable[[Any, Any], bool]]] = {
    annotated_types.Ge: ("ge", operator.ge),
    annotated_types.Gt: ("gt", operator.gt),
    annotated_types.Le: ("le", operator.le),
    annotated_types.Lt: ("lt", operator.lt),
}


def _never(_: Any) -> bool:
    return False


def _union_args(annotation: Any) -> tuple[Any, ...]:
    """The members of a union annotation (``X | None``, ``Optional[X]``), or the annotation alone."""
    if get_origin(annotation) in (Union, types.UnionType):
        return get_args(annotation)
    return (annotation,)


def literal_values(model: type[BaseModel], name: str) -> frozenset[Any]:
    """The values a ``Literal`` field takes, ``None`` among them when the field is optional."""
    values: set[Any] = set()
    for arg in _union_args(model.model_fields[name].annotation):
        if arg is _NONE:
            values.add(None)
        elif get_origin(arg) is Literal:
            values.update(get_args(arg))
        else:
            raise TypeError(f"{model.__name__}.{name} is not a Literal field: {arg!r}")
    return frozenset(values)


def bounds_check(model: type[BaseModel], name: str) -> Check:
    """Whether a value meets the field's ``ge``/``gt``/``le``/``lt`` constraints (any other constraint:
    never, so the model decides)."""
    limits: list[tuple[Callable[[Any, Any], bool], Any]] = []
    for constraint in model.model_fields[name].metadata:
        known = _BOUNDS.get(type(constraint))
        if known is None:
            return _never
        attr, op = known
        limits.append((op, getattr(constraint, attr)))
    if len(limits) == 1:
        (op, limit), *_ = limits
        return lambda v: op(v, limit)
    return lambda v: all(op(v, limit) for op, limit in limits)


def _type_check(annotation: Any) -> Check | None:
    """The exact-type check of one type (None: not a type these readers know)."""
    if annotation in (int, float, str, bool):
        return lambda v: type(v) is annotation
    if get_origin(annotation) is list and get_args(annotation) in ((int,), (float,), (str,)):
        (item,) = get_args(annotation)
        return lambda v: type(v) is list and all(type(x) is item for x in v)
    return None


def _members(model: type[BaseModel], name: str) -> list[Any]:
    return [a for a in _union_args(model.model_fields[name].annotation) if a is not _NONE]


def field_check(model: type[BaseModel], name: str) -> Check:
    """Whether a value has the field's exact type and meets its bounds (``None`` where it is optional)."""
    members = _members(model, name)
    nullable = len(members) < len(_union_args(model.model_fields[name].annotation))
    check = _type_check(members[0]) if len(members) == 1 else None
    if check is None:
        return _never
    if not model.model_fields[name].metadata:
        return lambda v: (v is None and nullable) or (v is not None and check(v))
    bounds = bounds_check(model, name)
    return lambda v: (v is None and nullable) or (v is not None and check(v) and bounds(v))


_SAMPLING_FIELDS = SamplingParams.model_fields
SAMPLING_ORDER: tuple[str, ...] = tuple(_SAMPLING_FIELDS)
"""``SamplingParams``' declared fields in its order (it writes these first, then the unknown ones)."""
SAMPLING_CHECKS: dict[str, Check] = {k: field_check(SamplingParams, k) for k in SAMPLING_ORDER}
SAMPLING_FLOATS: frozenset[str] = frozenset(
    k for k in SAMPLING_ORDER if _members(SamplingParams, k) == [float]
)
"""The float fields: an int given for one becomes the float it reads as (the model keeps ``1`` as ``1.0``)."""
SAMPLING_UNSET: frozenset[str] = frozenset(
    k for k, f in _SAMPLING_FIELDS.items() if f.default is None and f.default_factory is None
)
"""The fields that may be left out: the model writes nothing for them (a required field, or one with another
default, has to be there for the fast path to write the event)."""

INF_NAN_MODE = StepEvent.model_config.get("ser_json_inf_nan", "null")  # pydantic's default: null
"""How the models write an infinite or NaN float (the plain-data writer's own default is ``Infinity``)."""

OPERATIONS: frozenset[Any] = literal_values(GenAIAttributes, "operation_name")
OVERLAY_ARMS: frozenset[Any] = literal_values(StepMetadata, "overlay_arm")

STEP_INDEX_OK: Check = field_check(StepEvent, "step_index")
PREFIX_COUNT_OK: Check = field_check(Observation, "prefix_message_count")
PREFIX_LEN_OK: Check = field_check(Action, "prompt_token_prefix_len")
