"""Proxy config: where it listens, which backend serves which model, which API key is which tenant.

One frozen pydantic model per concern (``BackendConfig``, ``ApiKeyConfig``, ``ResponseChainConfig``,
``ProxyConfig``), parsed from the ``proxy:`` section of the Sluice YAML. Secrets are
``SecretStr`` so that logging the config masks them.

    sluice config show          # the config in effect, secrets masked
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from sluice.events import TENANT_PATTERN
from sluice.frozen import Frozen


class BackendConfig(Frozen):
    """One OpenAI-compatible upstream (vLLM, a hosted API, the local CPU model server)."""

    name: str
    base_url: str = Field(description="Up to and including /v1, e.g. http://127.0.0.1:8000/v1")
    models: list[str] = Field(default_factory=lambda: ["*"], description="Model names or globs it serves.")
    api_key: SecretStr | None = None
    api_key_env: str | None = Field(None, description="Read the upstream key from this env var instead.")
    return_token_ids: bool = Field(False, description="Ask for token ids/logprobs (vLLM supports it).")
    model_version: str | None = Field(None, description="Recorded on every step (replay grading uses it).")
    timeout_s: float = Field(600.0, gt=0)
    max_connections: int = Field(256, ge=1)

    @field_validator("base_url")
    @classmethod
    def _strip_slash(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError("base_url must start with http:// or https://")
        return v.rstrip("/")

    def serves(self, model: str) -> bool:
        return any(fnmatch.fnmatchcase(model, pat) for pat in self.models)

    def credential(self) -> str | None:
        if self.api_key is not None:
            return self.api_key.get_secret_value()
        if self.api_key_env:
            return os.environ.get(self.api_key_env)
        return None


class ApiKeyConfig(Frozen):
    """An agent-facing key; the tenant comes from here, never from a self-declared header alone."""

    key: SecretStr
    tenant: str = Field(
        pattern=rf"^{TENANT_PATTERN}$",
        description="Tenant name: it scopes the key's trajectory ids (tenant~id), so no '~' in it.",
    )
    data_class: str | None = Field(None, description="Default data class of this key's traffic.")
    consent_training: bool | None = Field(
        None, description="Training consent attached to this key's traffic."
    )


class ResponseChainConfig(Frozen):
    """What the proxy keeps for ``previous_response_id`` on ``/v1/responses`` (in memory only)."""

    max_responses: int = Field(
        10_000, ge=0, description="Responses kept over all tenants (0: keep none, every id is unknown)."
    )
    max_bytes: int = Field(
        64 * 1024 * 1024, ge=0, description="Message JSON kept over all tenants; least recently used first."
    )
    ttl_s: float = Field(3600.0, gt=0, description="A response is forgotten this long after its last use.")


class ProxyConfig(Frozen):
    host: str = "127.0.0.1"
    port: int = Field(8787, ge=0, le=65535)
    backends: list[BackendConfig] = Field(default_factory=list)
    api_keys: list[ApiKeyConfig] = Field(default_factory=list)
    require_api_key: bool = Field(True, description="Reject calls without a configured key (401).")
    trajectory_header: str = "x-sluice-trajectory-id"
    session_header: str = Field("x-sluice-session-id", description="Recorded as StepEvent.session_id.")
    consent_header: str = Field(
        "x-sluice-consent", description="'false' narrows training consent; it can never widen it."
    )
    data_class_header: str = Field(
        "x-sluice-data-class", description="A stricter data class than the key's (never a looser one)."
    )
    subject_header: str = Field(
        "x-sluice-subject-id", description="Comma-separated data-subject ids, for erasure requests."
    )
    data_classes: list[str] = Field(
        default_factory=lambda: ["public", "internal", "confidential", "restricted", "prohibited"],
        description="Data classes from least to most restrictive: headers may only move right.",
    )
    default_data_class: str = Field("internal", description="Data class when the key names none.")
    header_allowlist: list[str] = Field(
        default_factory=lambda: ["user-agent", "x-sluice-session-id", "openai-organization"],
        description="Request headers recorded on the step. Credentials are never recorded, even if listed.",
    )
    sensitive_headers: list[str] = Field(
        default_factory=lambda: [
            "authorization",
            "x-api-key",
            "api-key",
            "cookie",
            "set-cookie",
            "proxy-authorization",
        ],  # fmt: skip
        description="Headers scrubbed from every record and log.",
    )
    max_body_bytes: int = Field(8 * 1024 * 1024, ge=1024)
    forward_unrecorded: bool = Field(
        True,
        description="Forward, unrecorded, calls to other paths below /v1 (embeddings, moderations, audio, "
        "files) to a backend; false: they are a 404.",
    )
    spool_dir: Path = Field(
        Path("var/spool"),
        description="The write-ahead log: every event until the broker acknowledged it (raw traffic).",
    )
    spool_max_memory_events: int = Field(
        10_000, ge=1, description="Events held in RAM for the producer; beyond, they are read from the log."
    )
    spool_segment_bytes: int = Field(
        16 * 1024 * 1024, ge=4096, description="Write-ahead log segment size before rotation."
    )
    wal_segment_max_age_s: float = Field(
        30.0,
        gt=0,
        description="Rotate a log segment after this long: acknowledged raw events stay on disk about this long.",
    )
    wal_fsync: bool = Field(
        False,
        description="Also fdatasync each group commit before answering (survives a machine crash, not only "
        "a crash of the proxy; costs the disk's flush latency).",
    )
    wal_before_response: bool = Field(
        True,
        description="Complete a response only once its events are in the write-ahead log (what makes a "
        "SIGKILL lose nothing). Off only for benchmarks, to measure what the wait costs: the log is then "
        "written every few milliseconds and a crash can lose the events answered in between.",
    )
    wal_keep_until: Literal["auto", "landed", "delivered"] = Field(
        "auto",
        description="How long the write-ahead log keeps an event: until the broker acknowledged it "
        "(delivered), or until the stages processed it into state that outlives the broker (landed: "
        "a restart of a broker that keeps topics in memory loses nothing). auto: landed on the embedded "
        "broker, delivered on a real cluster.",
    )
    land_interval_s: float = Field(
        1.0, gt=0, description="How often the proxy checks which of its events have landed (landed only)."
    )
    publish: bool = Field(True, description="Publish step events (off only for benchmarks).")
    overlays: bool = Field(
        True,
        description="Apply the control plane's overlay assignments, read from the overlays topic (needs "
        "publish: a proxy that reaches no broker serves the bare agent).",
    )
    publish_timeout_ms: int = Field(
        10_000,
        ge=500,
        description="A record not acknowledged within this time counts as undeliverable and goes to the spool.",
    )
    publish_linger_ms: int = Field(
        5,
        ge=0,
        le=100,
        description="How long a step event waits in the producer for company before its record batch "
        "leaves (librdkafka ``linger.ms``). Off the response path: the agent's answer waits for the "
        "write-ahead log, never for the broker. Records share batches on every broker profile.",
    )
    probe_interval_s: float = Field(1.0, gt=0, description="How often a spooling proxy checks the broker.")
    shutdown_flush_s: float = Field(5.0, ge=0, description="On exit, wait this long for deliveries.")
    link_window_s: float = Field(
        3600.0, gt=0, description="How long a trajectory can be extended by history."
    )
    link_max_trajectories: int = Field(
        100_000, ge=1, description="Trajectories remembered for linking (least recently used go first)."
    )
    link_max_tokens: int = Field(
        262_144, ge=0, description="Token ids kept per trajectory to compute prompt_token_prefix_len."
    )
    link_token_budget: int = Field(
        20_000_000, ge=0, description="Token ids kept over all trajectories (4 bytes each); LRU beyond it."
    )
    link_chain_bytes: int = Field(
        64 << 20,
        ge=0,
        description="Memory for the link hashes of each trajectory's last input (~400 bytes + 57 per "
        "message), so that a call hashes only the messages new since then; LRU beyond it, 0 = off.",
    )
    seen_max_trajectories: int = Field(
        200_000,
        ge=1,
        description="Trajectories GET /v1/trajectories/{id} knows before they land (ids and counts, LRU).",
    )
    rewards_before_steps: bool = Field(
        True,
        description="Accept a reward or feedback for an id this tenant has no step of yet (agents may "
        "send them first); false answers 404 unless this proxy recorded a step of it or it landed.",
    )
    response_chains: ResponseChainConfig = Field(default_factory=ResponseChainConfig)

    @model_validator(mode="after")
    def _check(self) -> ProxyConfig:
        names = [b.name for b in self.backends]
        if len(names) != len(set(names)):
            raise ValueError("backend names must be unique")
        keys = [k.key.get_secret_value() for k in self.api_keys]
        if len(keys) != len(set(keys)):
            raise ValueError("api_keys must be unique")
        if self.default_data_class not in self.data_classes:
            raise ValueError(f"default_data_class {self.default_data_class!r} is not in data_classes")
        for k in self.api_keys:
            if k.data_class is not None and k.data_class not in self.data_classes:
                raise ValueError(f"api key of tenant {k.tenant!r}: unknown data_class {k.data_class!r}")
        return self

    def backend_for(self, model: str) -> BackendConfig | None:
        return next((b for b in self.backends if b.serves(model)), None)
