"""The one Sluice config: a frozen pydantic model per component, composed into ``SluiceConfig``.

YAML is parsed only at entry points (``load_config``). A bad file fails fast with every bad field's
dotted path and reason (``ConfigError``). Broker quirks live in one place: ``BrokerConfig.profile``
(``tansu`` for the embedded local broker, ``kafka`` for a real cluster), from which the producer,
consumer and Faust settings are derived rather than asked for.

    sluice config check infra/sluice.yaml
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from governance.config import EligibilityPolicy, RedactionConfig, ReplayConfig, RewardJoinConfig
from pipeline.console.config import ConsoleConfig
from pipeline.evolve.loop_config import EvolveConfig
from pipeline.otel_export.config import OtelExportConfig
from pipeline.proxy.config import ProxyConfig
from sinks.config import SinkConfig
from sluice.errors import ConfigError, validation_problems
from sluice.frozen import Frozen
from trainers.config import TrainerConfig

DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "infra" / "sluice.yaml"


class BrokerConfig(Frozen):
    """Where Kafka is, and which broker's quirks to work around."""

    bootstrap_servers: str = Field("127.0.0.1:19092", description="host:port[,host:port...]")
    profile: Literal["tansu", "kafka"] = Field(
        "tansu", description="tansu: the embedded local broker (one record per batch); kafka: a real cluster."
    )
    embedded: bool = Field(True, description="Start the local Tansu broker (sluice up / sluice broker).")
    session_timeout_ms: int = Field(6000, ge=1000)
    fetch_max_wait_ms: int = Field(
        50, ge=1, description="tansu: how long a fetch may wait for data (Tansu answers late otherwise)."
    )
    client_id: str = "sluice"

    @property
    def port(self) -> int:
        return int(self.bootstrap_servers.split(",")[0].rsplit(":", 1)[1])

    def producer_config(self, **overrides: Any) -> dict[str, Any]:
        """confluent-kafka producer settings: idempotent, acks=all, murmur2 like Java/aiokafka/Faust."""
        conf: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "client.id": self.client_id,
            "enable.idempotence": True,
            "acks": "all",
            "partitioner": "murmur2_random",
            "linger.ms": 2,
            "message.timeout.ms": 0,  # never give up on a message: delivery failures come from the spool
        }
        if self.profile == "tansu":
            # Tansu's ListOffsets(latest) is wrong for multi-record batches: keep one record per batch.
            conf["batch.num.messages"] = 1
        conf.update(overrides)
        return conf

    def consumer_config(self, group_id: str, **overrides: Any) -> dict[str, Any]:
        conf: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "client.id": self.client_id,
            "group.id": group_id,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": self.session_timeout_ms,
            "heartbeat.interval.ms": max(500, self.session_timeout_ms // 6),
        }
        if self.profile == "tansu":
            conf["fetch.wait.max.ms"] = self.fetch_max_wait_ms
        conf.update(overrides)
        return conf

    def faust_settings(self) -> dict[str, Any]:
        """Settings for ``faust.App`` that keep tables correct on this broker."""
        # Both profiles run the stages' own transport (pipeline/stages/transport.py): its rebalance and
        # commit fixes are in the client, whatever the broker; the tansu profile adds the short fetch wait.
        scheme = f"sluice-{self.profile}"
        settings: dict[str, Any] = {
            "broker": ",".join(f"{scheme}://{s}" for s in self.bootstrap_servers.split(",")),
            "broker_session_timeout": self.session_timeout_ms / 1000,
            "broker_heartbeat_interval": max(0.5, self.session_timeout_ms / 6000),
            "table_standby_replicas": 0,
        }
        if self.profile == "tansu":
            settings["producer_max_batch_size"] = 1
        return settings


class TopicsConfig(Frozen):
    """Topic names and partitioning. Joined topics share one partition count, keyed by trajectory id."""

    prefix: str = Field("sluice.", description="Prepended to every topic name (tests use a unique one).")
    partitions: int = Field(4, ge=1, description="Partition count of every keyed topic.")
    replication_factor: int = Field(1, ge=1)
    raw_retention_hours: float = Field(24.0, gt=0, description="Short retention: raw text is quarantined.")
    steps_raw: str = "steps.raw"
    steps_redacted: str = "steps.redacted"
    rewards_raw: str = "rewards.raw"
    trajectories_audited: str = "trajectories.audited"
    trajectories_train: str = "trajectories.train"
    deadletter: str = "deadletter"
    erasure: str = "erasure"
    policy_events: str = "policy.events"
    overlays: str = Field("overlays", description="Overlay assignments per tenant/task (compacted).")
    ledger: str = Field(
        "evolution.ledger", description="Every proposal, gate and decision of the control plane."
    )

    def name(self, logical: str) -> str:
        """Full topic name of a logical topic, e.g. ``name('steps_raw') -> 'sluice.steps.raw'``."""
        return self.prefix + getattr(self, logical)

    def all(self) -> dict[str, str]:
        return {k: self.name(k) for k in TOPIC_KEYS}

    def topic_configs(self, logical: str) -> dict[str, str]:
        """Per-topic broker configs: short retention for raw, compaction for the audited store."""
        if logical in ("steps_raw", "rewards_raw", "deadletter"):  # dead letters may hold raw bytes
            return {"retention.ms": str(int(self.raw_retention_hours * 3600 * 1000))}
        if logical in ("trajectories_audited", "trajectories_train"):
            return {"cleanup.policy": "compact,delete"}
        if logical == "overlays":  # the latest assignment per scope is all a proxy needs
            return {"cleanup.policy": "compact"}
        return {}


TOPIC_KEYS = (
    "steps_raw",
    "steps_redacted",
    "rewards_raw",
    "trajectories_audited",
    "trajectories_train",
    "deadletter",
    "erasure",
    "policy_events",
    "overlays",
    "ledger",
)


class StagesConfig(Frozen):
    """The Faust worker that runs the governance stages."""

    app_id: str = "sluice-stages"
    data_dir: Path = Path("var/stages")
    workers: int = Field(1, ge=1, description="Worker processes started by `sluice up`.")
    web_port: int | None = Field(None, description="Faust web port; None runs --without-web.")
    store: Literal["rocksdb", "memory"] = Field(
        "rocksdb",
        description="Table store: rocksdb keeps join state on disk (days-long waits are not bounded by "
        "RAM; restarts reuse it); memory rebuilds every table from its changelog on start.",
    )
    rocksdb_cache_mb: int = Field(64, ge=1, description="RocksDB block cache per table partition.")
    commit_interval_s: float = Field(1.0, gt=0, description="How often processed offsets are committed.")
    stats_interval_s: float = Field(30.0, gt=0, description="How often the worker logs its counters.")
    heartbeat_s: float = Field(
        2.0,
        gt=0,
        description="How often the worker refreshes its heartbeat file (what `sluice status` reads).",
    )


class UpConfig(Frozen):
    """What `sluice up` runs besides the core services."""

    local_model_backend: str | None = Field(
        "local-cpu",
        description="Proxy backend served by `sluice serve-model` on its base_url port; None = none.",
    )
    log_file: Path = Path("var/logs/up.log")
    state_file: Path = Field(
        Path("var/run/up.json"), description="Services, pids and restart counts of `sluice up` (for status)."
    )
    ready_timeout_s: float = Field(120.0, gt=0, description="How long a service may take to become ready.")
    restart_backoff_s: float = Field(1.0, gt=0, description="Wait before restarting a crashed service.")
    restart_backoff_max_s: float = Field(
        30.0, gt=0, description="The wait doubles per fast failure, to this."
    )
    restart_fast_failure_s: float = Field(
        30.0, gt=0, description="A service that dies sooner than this after its start failed fast."
    )
    restart_max_fast_failures: int = Field(
        5,
        ge=1,
        description="Give up (stop everything) after this many fast failures of one service in a row.",
    )
    journal_dir: Path = Field(
        Path("var/journal"),
        description="The embedded broker's control topics (ledger, overlays, policy events, unprocessed "
        "erasures), copied while `sluice up` runs and replayed into every new broker.",
    )
    drain_timeout_s: float = Field(
        60.0,
        ge=0,
        description="A clean stop waits this long for the stages and the sink to consume what the proxy "
        "handed to the embedded broker (0: stop at once, losing what its topics hold).",
    )


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
