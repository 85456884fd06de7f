"""What ``sluice up`` runs besides the core services, and how it supervises them: ``UpConfig``."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from sluice.frozen import Frozen


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
    stop_grace_s: float = Field(
        15.0, gt=0, description="How long a service may take to exit after SIGTERM before it gets SIGKILL."
    )
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
