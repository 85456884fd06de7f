"""msgspec types mirrored from the event models' pydantic schema: a trajectory record checked at C speed.

The sink validates every trajectory it stores. Pydantic builds a dict or model per nested object, which
made validation the largest single cost of ingest (``python -m bench.sink``: ``validate_us_per_step``). ``wire_mirror`` derives, from
``Trajectory``'s own pydantic core schema (the one definition of the contract), a ``msgspec.Struct`` per
model with the same fields, types, defaults and constraints, so a record is decoded and checked in one
pass of msgspec's C decoder:

- a model becomes a Struct that refuses unknown fields where the model forbids extras and ignores them
  where it allows extras (the model accepts any extra value, so there is nothing to check);
- str, bool, float, Any, lists, dicts, literals, unions and nullables map one to one; an int keeps its
  ``ge`` bound; a field keeps its default or default factory (a model factory becomes its Struct);
- datetimes are parsed by the model's own datetime validator (a ``dec_hook``): msgspec would round
  sub-microsecond digits where pydantic truncates them, and takes fewer spellings;
- anything else (custom validators, aliases, other constraints) raises ``UnsupportedSchema``, and the
  sink then validates through the model only.

The mirror is never laxer than the model: msgspec does not coerce ("1" is not an int, 1.0 is not one
either, "true" is not a bool), so a record it accepts the model accepts, with the same values. A record it
refuses is decoded by the model, which decides and explains. ``tests/sinks/test_wire_mirror.py`` checks
both directions on valid records, on mutated ones and on edge spellings.

    pytest tests/sinks/test_wire_mirror.py
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Annotated, Any, Literal, Union

import msgspec
from pydantic import BaseModel, TypeAdapter
from pydantic_core import SchemaValidator

from sluice.events import AnyEvent, StepEvent, Trajectory, TrajectoryStep

log = logging.getLogger(__name__)


class UnsupportedSchema(Exception):
    """The model's schema uses something the mirror cannot reproduce exactly."""


_SCALARS: dict[str, Any] = {"str": str, "bool": bool, "float": float, "any": Any}
_PLAIN = {"type", "metadata", "ref"}  # keys of a schema node that constrain nothing


class _DatetimeMarker(type):
    """Type of the mirror's datetime markers. msgspec checks that what the hook returns is an instance
    of the declared type: a plain datetime (which the garbage collector does not track) is one."""

    def __instancecheck__(cls, obj: object) -> bool:
        return obj.__class__ is datetime


class _Stamps:
    """Datetime types of the mirror, each parsed by the pydantic validator of its schema node."""

    def __init__(self) -> None:
        self.validators: dict[type, SchemaValidator] = {}
        self._by_node: dict[str, type] = {}

    def type_for(self, node: dict[str, Any]) -> type:
        key = repr(sorted(node.items()))
        if key not in self._by_node:
            marker = _DatetimeMarker(f"Datetime{len(self._by_node)}", (), {})
            self._by_node[key] = marker
            self.validators[marker] = SchemaValidator(dict(node))
        return self._by_node[key]

    def dec_hook(self, kind: type, obj: Any) -> Any:
        validator = self.validators.get(kind)
        if validator is None:
            raise NotImplementedError(f"no mirror type {kind}")
        if not isinstance(obj, str):  # JSON has no datetime literal: the wire form writes a string
            raise ValueError("expected a datetime string")
        return validator.validate_python(obj)  # pydantic's ValidationError is a ValueError


class _Mirror:
    def __init__(self) -> None:
        self.structs: dict[type[BaseModel], type[msgspec.Struct]] = {}
        self.stamps = _Stamps()

    def annotation(self, node: dict[str, Any]) -> Any:
        kind = node.get("type")
        if kind in _SCALARS:
            self._plain(node, {"strict"})
            return _SCALARS[kind]
        if kind == "int":
            self._plain(node, {"strict", "ge"})
            return Annotated[int, msgspec.Meta(ge=node["ge"])] if "ge" in node else int
        if kind == "datetime":
            self._plain(node, {"microseconds_precision"})
            return self.stamps.type_for(node)
        if kind == "nullable":
            self._plain(node, {"schema"})
            return Union[self.annotation(node["schema"]), None]  # noqa: UP007 (built at run time)
        if kind == "list":
            self._plain(node, {"items_schema"})
            return list[self.annotation(node.get("items_schema", {"type": "any"}))]
        if kind == "dict":
            self._plain(node, {"keys_schema", "values_schema"})
            keys = self.annotation(node.get("keys_schema", {"type": "any"}))
            return dict[keys, self.annotation(node.get("values_schema", {"type": "any"}))]
        if kind == "literal":
            self._plain(node, {"expected"})
            return Literal[tuple(node["expected"])]
        if kind == "union":
            self._plain(node, {"choices"})
            if any(not isinstance(c, dict) for c in node["choices"]):
                raise UnsupportedSchema("tagged union choices")
            return Union[tuple(self.annotation(c) for c in node["choices"])]  # noqa: UP007
        if kind == "model":
            return self.struct(node)
        raise UnsupportedSchema(f"schema type {kind!r}")

    def struct(
        self, model: dict[str, Any], raw: dict[str, Any] | None = None, tag: str | None = None
    ) -> type[msgspec.Struct]:
        """The Struct of a model node. ``raw``: the record's own type, the named fields left as raw bytes
        (field name -> ``msgspec.Raw`` or ``list[msgspec.Raw]``); ``tag``: the field a record is told
        apart by, which must then be present."""
        cls = model["cls"]
        if cls in self.structs and not raw:
            return self.structs[cls]
        inner = model["schema"]
        if inner.get("type") != "model-fields" or inner.get("computed_fields") or model.get("custom_init"):
            raise UnsupportedSchema(f"model {cls.__name__} is not plain fields")
        fields: list[tuple[Any, ...]] = []
        for name, f in inner["fields"].items():
            if set(f) - {"type", "schema", "metadata"}:
                raise UnsupportedSchema(f"{cls.__name__}.{name}: aliases or exclusions")
            schema = f["schema"]
            if raw and name in raw:
                kind = raw[name]
                fields.append(
                    (name, kind) if kind is msgspec.Raw else (name, kind, msgspec.field(default_factory=list))
                )
            elif schema.get("type") == "default" and name != tag:
                fields.append((name, self.annotation(schema["schema"]), self._default(schema)))
            else:
                required = schema["schema"] if schema.get("type") == "default" else schema
                fields.append((name, self.annotation(required)))
        extra = (
            model.get("config", {}).get("extra_fields_behavior") or inner.get("extra_behavior") or "ignore"
        )
        # gc=False: decoded JSON is a tree, so these never sit in a reference cycle; untracked, they
        # cost the garbage collector nothing
        out = msgspec.defstruct(
            f"{cls.__name__}Wire", fields, kw_only=True, forbid_unknown_fields=extra == "forbid", gc=False
        )
        if not raw:
            self.structs[cls] = out
        return out

    def _default(self, node: dict[str, Any]) -> Any:
        if set(node) - {"type", "schema", "default", "default_factory", "default_factory_takes_data"}:
            raise UnsupportedSchema("default with validation options")
        if node.get("default_factory_takes_data"):
            raise UnsupportedSchema("default factory that takes the data")
        if "default" in node:
            value = node["default"]
            if isinstance(value, (list, dict, set)):
                return msgspec.field(default_factory=lambda v=value: type(v)(v))
            return value
        factory = node["default_factory"]
        if isinstance(factory, type) and issubclass(factory, BaseModel):
            return msgspec.field(default_factory=self.struct(factory.__pydantic_core_schema__))
        return msgspec.field(default_factory=factory)

    @staticmethod
    def _plain(node: dict[str, Any], allowed: set[str]) -> None:
        extra = set(node) - _PLAIN - allowed
        if extra:
            raise UnsupportedSchema(f"{node.get('type')} with {sorted(extra)}")


@dataclass(frozen=True)
class WireDecoders:
    """Decoders of a trajectory record (its fields with each step left as raw bytes), of a step record
    (its fields with its step left as raw bytes), and of one step."""

    header: msgspec.json.Decoder[Any]
    step_record: msgspec.json.Decoder[Any]
    step: msgspec.json.Decoder[Any]


@cache
def wire_mirror() -> WireDecoders | None:
    """The trajectory decoders mirrored from the models (None: the schema cannot be mirrored; every
    record then takes the model path)."""
    mirror = _Mirror()
    try:
        step = mirror.struct(StepEvent.__pydantic_core_schema__)
        # A record is decoded as any event, told apart by its tag: the trajectory choice of that union.
        union = TypeAdapter(AnyEvent).core_schema
        if union.get("type") != "tagged-union" or not isinstance(union.get("discriminator"), str):
            raise UnsupportedSchema("events are not a union tagged by one field")
        choice = union["choices"].get("trajectory")
        if not isinstance(choice, dict) or choice.get("cls") is not Trajectory:
            raise UnsupportedSchema("no trajectory choice in the event union")
        step_choice = union["choices"].get("trajectory_step")
        if not isinstance(step_choice, dict) or step_choice.get("cls") is not TrajectoryStep:
            raise UnsupportedSchema("no trajectory step choice in the event union")
        tag = union["discriminator"]
        header = mirror.struct(choice, raw={"steps": list[msgspec.Raw]}, tag=tag)
        step_record = mirror.struct(step_choice, raw={"step": msgspec.Raw}, tag=tag)
        hook = mirror.stamps.dec_hook
        return WireDecoders(
            header=msgspec.json.Decoder(header, dec_hook=hook),
            step_record=msgspec.json.Decoder(step_record, dec_hook=hook),
            step=msgspec.json.Decoder(step, dec_hook=hook),
        )
    except (UnsupportedSchema, TypeError) as err:  # TypeError: a type msgspec cannot decode (a union)
        log.warning("trajectories are decoded through the model only: %s", err)
        return None
