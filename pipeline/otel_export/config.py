"""Config of the OpenTelemetry exporter (the ``otel:`` section of the YAML file). Off by default.

otel:
  enabled: true
  endpoint: http://127.0.0.1:4318/v1/traces     # any OTLP/HTTP receiver (Phoenix, a collector)
"""

from __future__ import annotations

from pydantic import Field, SecretStr

from sluice.frozen import Frozen


class OtelExportConfig(Frozen):
    enabled: bool = Field(False, description="Run `sluice otel-export` under `sluice up`.")
    endpoint: str = Field(
        "http://127.0.0.1:4318/v1/traces", description="OTLP/HTTP traces endpoint (protobuf)."
    )
    headers: dict[str, SecretStr] = Field(
        default_factory=dict, description="Headers sent to the receiver (e.g. authorization of a hosted one)."
    )
    service_name: str = Field("sluice", description="service.name of the exported resource.")
    content: bool = Field(
        True,
        description="Export the (redacted) messages as gen_ai.input.messages / gen_ai.output.messages; "
        "false exports metadata only.",
    )
    group_id: str = Field("sluice-otel-export", description="Consumer group on the audited topic.")
    batch_max: int = Field(200, ge=1, description="Trajectory versions per OTLP request.")
    timeout_s: float = Field(10.0, gt=0, description="OTLP request timeout.")
    retry_max_s: float = Field(30.0, gt=0, description="Backoff cap while the receiver is unreachable.")
