"""Which environment variables a Sluice service reads, from the code that reads them.

A service is ``sluice <args>``: it reads the ``envvar`` options of the click commands on its path
(``SLUICE_CONFIG``, ``SLUICE_LOG_LEVEL``, ...), every ``${VAR}`` of the config it loads (the loader
expands them all, so an unset one without a default stops any service at start), and, for the proxy,
the upstream keys named by ``proxy.backends[].api_key_env``. Deploy files are checked against this
(``tests/infra``): each container must get every variable it needs and nothing it does not read.

    python -c "from infra.service_env import needs; print(needs(['proxy'], open('sluice.yaml').read()))"
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import click
import yaml

from app.config import env_references


@dataclass(frozen=True)
class ServiceEnv:
    """What one service reads: ``required`` must be set, ``optional`` may be."""

    required: frozenset[str]
    optional: frozenset[str] = field(default_factory=frozenset)

    @property
    def reads(self) -> frozenset[str]:
        return self.required | self.optional


def command_envvars(args: list[str]) -> set[str]:
    """The envvar options of ``sluice <args>``: the root group's and every command's on the path."""
    from app.cli import cli

    found: set[str] = set()
    command: click.Command | None = cli
    ctx = click.Context(cli)
    rest = list(args)
    while command is not None:
        for param in command.params:
            names = param.envvar if isinstance(param.envvar, list | tuple) else [param.envvar]
            found |= {n for n in names if n}
        if not isinstance(command, click.Group) or not rest:
            break
        nxt = command.get_command(ctx, rest[0])
        if nxt is None:
            raise click.UsageError(f"sluice has no command {' '.join(args)!r}")
        command, rest = nxt, rest[1:]
    return found


def backend_key_envs(config: dict[str, Any]) -> set[str]:
    proxy = config.get("proxy") or {}
    return {b["api_key_env"] for b in proxy.get("backends") or [] if b.get("api_key_env")}


def needs(args: list[str], config_text: str) -> ServiceEnv:
    """The environment of ``sluice <args>`` run with the config ``config_text`` (raw YAML)."""
    config = yaml.safe_load(config_text) or {}
    refs = env_references(config)
    required = {name for name, default in refs.items() if default is None}
    optional = {name for name, default in refs.items() if default is not None} | command_envvars(args)
    if args[:1] == ["proxy"]:
        optional |= backend_key_envs(config)  # read per request; unset means no upstream key
    return ServiceEnv(frozenset(required), frozenset(optional - required))
