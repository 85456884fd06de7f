"""The one base of every config model: frozen (a component cannot change the config it was given) and
strict (an unknown key is an error that names it)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
