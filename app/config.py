"""The one Sluice config: every component's own section, composed into ``SluiceConfig``.

Each section is a frozen pydantic model defined beside the component that reads it (the shared broker and
topic sections in ``sluice``). YAML is parsed only at entry points (``load_config``). A bad file fails fast
with every bad field's dotted path and reason (``ConfigError``).

    sluice config check infra/sluice.yaml
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from governance.config import EligibilityPolicy, RedactionConfig, ReplayConfig, RewardJoinConfig
from pipeline.console.config import ConsoleConfig
from pipeline.evolve.loop_config import EvolveConfig
from pipeline.evolve.settings import EvolveSettings
from pipeline.otel_export.config import OtelExportConfig
from pipeline.proxy.config import ProxyConfig
from pipeline.proxy.settings import ProxySettings
from pipeline.stages.config import StagesConfig
from pipeline.stages.names import app_id
from pipeline.stages.settings import StagesSettings
from pipeline.up_config import UpConfig
from sinks.config import SinkConfig
from sinks.settings import SinkSettings, TenantKey
from sluice.broker_config import BrokerConfig
from sluice.errors import ConfigError, validation_problems
from sluice.evolution import PolicyRoutes
from sluice.frozen import Frozen
from sluice.rebuild_files import rebuild_root
from sluice.settings import Settings
from sluice.topics_config import TopicsConfig
from trainers.config import TrainerConfig
from trainers.settings import TrainerSettings

S = TypeVar("S", bound=Settings)

DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "infra" / "sluice.yaml"


class SluiceConfig(Frozen):
    """Everything, from one YAML file."""

    broker: BrokerConfig = Field(default_factory=BrokerConfig)
    topics: TopicsConfig = Field(default_factory=TopicsConfig)
    proxy: ProxyConfig = Field(default_factory=ProxyConfig)
    stages: StagesConfig = Field(default_factory=StagesConfig)
    redaction: RedactionConfig = Field(default_factory=RedactionConfig)
    eligibility: EligibilityPolicy = Field(default_factory=EligibilityPolicy)
    rewards: RewardJoinConfig = Field(default_factory=RewardJoinConfig)
    replay: ReplayConfig = Field(default_factory=ReplayConfig)
    sink: SinkConfig = Field(default_factory=SinkConfig)
    trainer: TrainerConfig = Field(default_factory=TrainerConfig)
    up: UpConfig = Field(default_factory=UpConfig)
    otel: OtelExportConfig = Field(default_factory=OtelExportConfig)
    ui: ConsoleConfig = Field(default_factory=ConsoleConfig)
    evolve: EvolveConfig = Field(default_factory=EvolveConfig)
    base_dir: Path = Field(Path("."), description="Relative paths in this file resolve against it.")

    @field_validator("base_dir")
    @classmethod
    def _abs(cls, v: Path) -> Path:
        return v.resolve()

    @model_validator(mode="after")
    def _cross_checks(self) -> SluiceConfig:
        if self.broker.profile == "kafka" and self.broker.embedded:
            raise ValueError("broker.embedded=true needs broker.profile=tansu (the embedded broker is Tansu)")
        name = self.up.local_model_backend
        if name is not None and self.proxy.backends and name not in {b.name for b in self.proxy.backends}:
            raise ValueError(f"up.local_model_backend={name!r} names no proxy backend")
        return self

    def local_model_port(self) -> int | None:
        """Port `sluice up` serves the local CPU model on: derived from that backend's loopback base_url."""
        name = self.up.local_model_backend
        backend = next((b for b in self.proxy.backends if b.name == name), None)
        if backend is None:
            return None
        url = urlsplit(backend.base_url)
        if url.hostname not in ("127.0.0.1", "localhost") or url.port is None:
            return None
        return url.port

    def path(self, p: Path | str) -> Path:
        """Resolve a config-relative path."""
        p = Path(p)
        return p if p.is_absolute() else self.base_dir / p

    def settings(self, bundle: type[S], **extras: Any) -> S:
        """A component's settings bundle: each of its fields named like a section here takes that section;
        ``extras`` give the rest (values the component takes from other components' sections)."""
        own = {name: getattr(self, name) for name in bundle.model_fields if name in type(self).model_fields}
        return bundle(**{**own, **extras})

    def trainer_settings(self) -> TrainerSettings:
        """What the trainer and the model server read."""
        return self.settings(TrainerSettings)

    def proxy_settings(self) -> ProxySettings:
        """What the proxy reads."""
        live = self.trainer.live
        routes = PolicyRoutes(default_scope=live.default_scope, scopes=live.scopes, untrained=live.untrained)
        return self.settings(
            ProxySettings,
            stages_group=app_id(self.topics, self.stages),
            store=self.sink_settings(),
            routes=routes,
        )

    def stages_settings(self) -> StagesSettings:
        """What the stage worker reads."""
        return self.settings(StagesSettings, sink_database=self.sink.database)

    def evolve_settings(self) -> EvolveSettings:
        """What the control plane's loop reads."""
        return self.settings(
            EvolveSettings, store=self.sink_settings(), policy_servers=self.trainer.policy_server_urls()
        )

    def sink_settings(self) -> SinkSettings:
        """What the sink, its query server and its clients read."""
        return self.settings(
            SinkSettings,
            tenant_keys=tuple(TenantKey(key=k.key, tenant=k.tenant) for k in self.proxy.api_keys),
            sensitive_headers=tuple(self.proxy.sensitive_headers),
            keep_erased_s=self.rewards.keep_erased_s,
            checkpoints_dir=self.trainer.output_dir / "checkpoints",
            policy_push_dir=self.trainer.output_dir / "push",
            rebuild_dir=rebuild_root(self.trainer.output_dir),
            policy_servers=tuple(self.trainer.policy_server_urls()),
        )


def format_validation_error(err: ValidationError) -> list[str]:
    """One line per bad field: ``dotted.path: reason``."""
    return [f"{loc or '<root>'}: {msg}" for loc, msg in validation_problems(err)]


_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _expand_env(obj: Any) -> Any:
    """Expand ``${VAR}`` and ``${VAR:-default}``; an unset VAR without default is a config error."""
    if isinstance(obj, str):

        def sub(m: re.Match[str]) -> str:
            value = os.environ.get(m.group(1), m.group(2))
            if value is None:
                raise ConfigError(
                    f"environment variable {m.group(1)} is not set (referenced as {m.group(0)})"
                )
            return value

        return _ENV_REF.sub(sub, obj)
    if isinstance(obj, dict):
        return {k: _expand_env(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_expand_env(v) for v in obj]
    return obj


def env_references(obj: Any) -> dict[str, str | None]:
    """Every ``${VAR}`` / ``${VAR:-default}`` in a raw config mapping: name -> default (None: required)."""
    found: dict[str, str | None] = {}
    if isinstance(obj, str):
        for m in _ENV_REF.finditer(obj):
            if found.get(m.group(1), "") is not None:
                found[m.group(1)] = m.group(2)
    elif isinstance(obj, dict | list):
        for value in obj.values() if isinstance(obj, dict) else obj:
            for name, default in env_references(value).items():
                if found.get(name, "") is not None:
                    found[name] = default
    return found


def parse_config(data: dict[str, Any] | None, base_dir: Path | None = None) -> SluiceConfig:
    """Validate a mapping; raises ``ConfigError`` listing every bad field."""
    data = _expand_env(dict(data or {}))
    if base_dir is not None and "base_dir" not in data:
        data["base_dir"] = str(base_dir)
    try:
        return SluiceConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError("invalid config", problems=format_validation_error(err)) from None


def load_config(path: str | Path | None = None) -> SluiceConfig:
    """Load and validate a YAML file (``None`` = the embedded default ``infra/sluice.yaml``).

    ``${VAR}`` in string values expands from the environment (secrets stay out of the file).
    Relative paths resolve against the current directory for the embedded default, else the file's folder.
    """
    p = Path(path) if path else DEFAULT_CONFIG
    try:
        data = yaml.safe_load(p.read_text())
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {p}") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{p}: not valid YAML", problems=[str(err)]) from None
    if data is not None and not isinstance(data, dict):
        raise ConfigError(f"{p}: top level must be a mapping, got {type(data).__name__}")
    base = Path.cwd() if path is None else p.resolve().parent
    try:
        return parse_config(data, base_dir=base)
    except ConfigError as err:
        raise ConfigError(f"{p}: {err.args[0]}", problems=err.problems) from None
