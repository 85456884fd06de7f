"""Config of the web console (the ``ui:`` section of the YAML file).

sluice ui --config infra/sluice.yaml      # http://127.0.0.1:8791, sign in with an API key
"""

from __future__ import annotations

from pydantic import Field

from sluice.frozen import Frozen


class ConsoleConfig(Frozen):
    host: str = Field("127.0.0.1", description="Address the console listens on.")
    port: int = Field(8791, ge=0, le=65535, description="Port of the console (0 = any free port).")
    session_hours: float = Field(12.0, gt=0, description="How long a sign-in lasts.")
    status_refresh_s: float = Field(5.0, gt=0, description="How often the status page refreshes itself.")
