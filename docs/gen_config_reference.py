"""The configuration reference, generated from the pydantic models of ``SluiceConfig``.

Walks the root config (``app.config.SluiceConfig``) section by section: every field's YAML key, type, default
and description, as the models declare them, with nested models as their own tables. The docs build
(``docs/hooks.py``) renders it into ``docs/configuration.md``, so the reference cannot drift from the code.

    python docs/gen_config_reference.py > /tmp/configuration.md
"""

from __future__ import annotations

import enum
import inspect
import types
import typing
from pathlib import Path

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined


def models_in(annotation: object) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds (``X``, ``X | None``, ``list[X]``, ``dict[str, X]``)."""
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return [annotation]
    out: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        out += [m for m in models_in(arg) if m not in out]
    return out


def type_name(annotation: object) -> str:
    """A short, readable type: ``int``, ``list[str]``, ``'tansu' | 'kafka'``, ``BackendConfig | None``."""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(a) for a in typing.get_args(annotation))
    if origin is typing.Annotated:
        return type_name(typing.get_args(annotation)[0])
    if origin is not None:
        args = ", ".join(type_name(a) for a in typing.get_args(annotation))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", str(annotation).replace("typing.", ""))


def default_text(field: FieldInfo) -> str:
    """The declared default as YAML would write it; sections and required fields say so."""
    if field.default_factory is not None:
        value = field.default_factory()
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if isinstance(value, BaseModel):
        return "(section)"
    if isinstance(value, SecretStr):
        return "(secret)"
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, Path):
        return f"`{value}`"
    if value is None:
        return "`null`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, list | dict | tuple) and len(repr(value)) > 60:
        return f"{type(value).__name__} of {len(value)}"
    return f"`{value!r}`" if isinstance(value, str) else f"`{value}`"


def cell(text: str) -> str:
    """Text fit for one Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def prose(text: str) -> str:
    """A description for one table cell: ``<`` escaped so that a placeholder is not read as HTML."""
    return cell(text).replace("<", "&lt;")


def model_tables(model: type[BaseModel], path: str, level: int, seen: set[type[BaseModel]]) -> list[str]:
    """One table for a model's fields, then one for each model nested in it (each model once)."""
    doc = inspect.cleandoc(model.__dict__.get("__doc__") or "")
    out = (
        [f"{'#' * level} `{path}`", "", prose(doc.split("\n\n")[0]), ""]
        if doc
        else [f"{'#' * level} `{path}`", ""]
    )
    out += ["| key | type | default | description |", "|---|---|---|---|"]
    nested: list[tuple[str, type[BaseModel]]] = []
    for name, field in model.model_fields.items():
        key = field.alias or name
        out.append(
            f"| `{key}` | `{cell(type_name(field.annotation))}` | {cell(default_text(field))} "
            f"| {prose(field.description or '')} |"
        )
        for sub in models_in(field.annotation):
            if sub not in seen:
                seen.add(sub)
                many = typing.get_origin(field.annotation) in (list, dict)
                nested.append((f"{path}.{key}{'[]' if many else ''}", sub))
    out.append("")
    for sub_path, sub in nested:
        out += model_tables(sub, sub_path, min(level + 1, 4), seen)
    return out


def render() -> str:
    """The whole reference, one section per top-level key of the YAML file."""
    from app.config import SluiceConfig

    seen: set[type[BaseModel]] = {SluiceConfig}
    lines: list[str] = []
    top = [(n, f) for n, f in SluiceConfig.model_fields.items() if not models_in(f.annotation)]
    if top:
        lines += ["## top level", "", "| key | type | default | description |", "|---|---|---|---|"]
        lines += [
            f"| `{n}` | `{cell(type_name(f.annotation))}` | {cell(default_text(f))} | {prose(f.description or '')} |"
            for n, f in top
        ]
        lines.append("")
    for name, field in SluiceConfig.model_fields.items():
        for model in models_in(field.annotation):
            if model not in seen:
                seen.add(model)
                lines += model_tables(model, name, 2, seen)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
