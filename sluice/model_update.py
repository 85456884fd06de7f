"""``updated(model, changes)``: ``model.model_copy(update=changes)`` made directly, for per-event paths.

The join copies its state, its eligibility facts and each assembled step with a few fields changed, several
times per event. pydantic's ``model_copy`` goes through ``copy.copy`` for the instance dict, the extra
fields, the fields set and the private attributes, which costs more than the copy itself; for a model with
no extra fields and no private attributes (every event, state and facts model: they forbid extras) this
builds the same object in one step. Anything else gets ``model_copy``. Like ``model_copy``, the changes
are not validated: give it values of the fields' types.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)
_set = object.__setattr__


def updated(model: M, changes: Mapping[str, Any]) -> M:
    """A shallow copy of ``model`` with ``changes`` set (and counted as set), as ``model_copy(update=)``."""
    if model.__pydantic_extra__ is not None or getattr(model, "__pydantic_private__", None) is not None:
        return model.model_copy(update=dict(changes))
    cls = type(model)
    new = cls.__new__(cls)
    values = model.__dict__.copy()
    values.update(changes)
    _set(new, "__dict__", values)
    _set(new, "__pydantic_extra__", None)
    _set(new, "__pydantic_fields_set__", model.__pydantic_fields_set__ | changes.keys())
    _set(new, "__pydantic_private__", None)
    return new
