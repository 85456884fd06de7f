"""Decode an audited record once and keep the bytes it came in: the sink's fast path for trajectories.

The stages publish trajectories in their wire form (``sluice.events.encode``: compact JSON without
nulls). For such a record, re-dumping the validated model gives back the bytes received, so the sink
stores what it received instead: ``receive_trajectory`` validates the record once into plain dicts and
returns the typed fields, the header JSON (the record less its steps) and each step's JSON exactly as
received.

How it stays equal to the model path (``decode`` + ``model_dump_json``): the validator is derived from
``Trajectory``'s own pydantic schema (one definition of the contract), with each model read as a typed
dict that gets no defaults filled in (a field with a default is required: a dump writes it) and no null
where the model has a field or takes extra ones (a dump without nulls would drop it), so it is stricter
than the model. A record is taken only when dumping the validated dicts gives back its bytes exactly (its
header's dump with each step's dump spliced in: each step's JSON is then its slice of the record).
Anything else (an invalid record, another event type, another JSON spelling) gets ``None`` and goes
through the model, which decides and explains as before.

    pytest tests/sinks/test_received.py
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cache
from typing import Any

import orjson
from pydantic_core import SchemaError, SchemaValidator, ValidationError

from sluice.events import Trajectory

log = logging.getLogger(__name__)

_DUMP = orjson.OPT_UTC_Z  # UTC datetimes end in "Z", as pydantic writes them


# Any JSON value but null, unchanged (a changed value would not dump back to the bytes received).
_NOT_NULL: dict[str, Any] = {
    "type": "union",
    "choices": [
        {"type": "str", "strict": True},
        {"type": "bool", "strict": True},
        {"type": "int", "strict": True},
        {"type": "float", "strict": True},
        {"type": "list", "items_schema": {"type": "any"}},
        {"type": "dict", "keys_schema": {"type": "str"}, "values_schema": {"type": "any"}},
    ],
}


class UnsupportedSchema(Exception):
    """The model's schema uses something the wire-form validator cannot mirror exactly."""


@dataclass(frozen=True, slots=True)
class ReceivedTrajectory:
    """A trajectory record validated into dicts (fields absent where the record omits them), with its JSON."""

    fields: dict[str, Any]
    header_json: str  # the record without its steps (what the model path stores for the version)
    step_json: list[str]  # each step as received, in order


def _wire_form(node: Any) -> Any:
    """``node`` of a pydantic core schema with every model turned into a typed dict that adds nothing:
    a field with a default is required (a wire-form record always has it), one whose default is None is
    optional, and nulls are refused everywhere the model declares a field."""
    if isinstance(node, list):
        return [_wire_form(x) for x in node]
    if not isinstance(node, dict):
        return node
    kind = node.get("type")
    if kind == "model":
        return _typed_dict(node)
    if kind == "nullable":
        return _wire_form(node["schema"])
    if isinstance(kind, str) and kind.startswith("function-"):
        raise UnsupportedSchema(f"custom validator ({kind})")
    return {k: _wire_form(v) for k, v in node.items()}


def _typed_dict(model: dict[str, Any]) -> dict[str, Any]:
    inner = model["schema"]
    if inner.get("type") != "model-fields" or inner.get("computed_fields"):
        raise UnsupportedSchema(f"model {model.get('cls')} is not plain fields")
    fields = {}
    for name, f in inner["fields"].items():
        if any(f.get(k) for k in ("validation_alias", "serialization_alias", "serialization_exclude")):
            raise UnsupportedSchema(f"{name}: aliases or exclusions")
        schema, required = f["schema"], True
        if schema.get("type") == "default":
            required = not ("default" in schema and schema["default"] is None)
            schema = schema["schema"]
        fields[name] = {"type": "typed-dict-field", "schema": _wire_form(schema), "required": required}
    extra = inner.get("extra_behavior") or model.get("config", {}).get("extra_fields_behavior") or "forbid"
    out: dict[str, Any] = {"type": "typed-dict", "fields": fields, "extra_behavior": extra}
    if extra == "allow":
        out["extras_schema"] = _NOT_NULL  # a dump without nulls drops an extra field that is null
    if "ref" in model:
        out["ref"] = model["ref"]
    return out


@cache
def wire_validator() -> SchemaValidator | None:
    """The wire-form validator of ``Trajectory`` (None: the schema cannot be mirrored; every record then
    takes the model path)."""
    try:
        return SchemaValidator(_wire_form(Trajectory.__pydantic_core_schema__))
    except (UnsupportedSchema, SchemaError) as err:  # SchemaError: a pydantic-core without a feature used
        log.warning("trajectories are decoded through the model only: %s", err)
        return None


def receive_trajectory(value: bytes) -> ReceivedTrajectory | None:
    """``value`` decoded and validated once, when it is a trajectory in wire form; else None."""
    validator = wire_validator()
    if validator is None:
        return None
    try:
        fields = validator.validate_json(value)
        steps = [orjson.dumps(s, option=_DUMP) for s in fields["steps"]]
        header = orjson.dumps({k: v for k, v in fields.items() if k != "steps"}, option=_DUMP)
    except (ValidationError, orjson.JSONEncodeError):
        return None
    if not _is_header_with_steps(value, header, steps):
        return None
    return ReceivedTrajectory(
        fields=fields, header_json=header.decode(), step_json=[s.decode() for s in steps]
    )


def _is_header_with_steps(value: bytes, header: bytes, steps: list[bytes]) -> bool:
    """Whether ``value`` is exactly ``header`` with the ``steps`` array as one of its fields (a field
    between others: ``steps`` is neither the first nor the last field of a wire-form trajectory)."""
    field = b'"steps":[' + b",".join(steps) + b"],"
    at = value.find(field)
    return at > 0 and value[:at] + value[at + len(field) :] == header
