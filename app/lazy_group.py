"""A click group whose subcommands are imported only when asked for, and which takes old spellings of
renamed subcommands without listing them."""

from __future__ import annotations

import importlib
from typing import Any

import click


class LazyGroup(click.Group):
    """A group that also lists the commands in ``lazy`` (name -> ``module:attribute``) and imports each
    one only when it is run or shown. ``aliases`` (old name -> current name) still run, unlisted."""

    def __init__(
        self,
        *args: Any,
        lazy: dict[str, str] | None = None,
        aliases: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})
        self.aliases = dict(aliases or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        name = self.aliases.get(name, name)
        if name in self.lazy:
            module, attr = self.lazy[name].split(":")
            return getattr(importlib.import_module(module), attr)
        return super().get_command(ctx, name)
