"""Who is asking: an API key resolves to a tenant (from ``proxy.api_keys``) or to the operator.

A tenant's key scopes queries, exports and erasures to that tenant's rows; the operator key
(``sink.admin_key``, else the key file made at first start, see ``sinks.admin_key``) is unscoped. A caller
without a key is refused: the store is closed by default. Keys are compared in constant time and never
logged or stored.

    SLUICE_API_KEY=sk-sluice-acme sluice query "SELECT count(*) FROM trajectories"
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from sinks.admin_key import read_admin_key
from sinks.exceptions import AuthError
from sinks.settings import SinkSettings


@dataclass(frozen=True)
class Principal:
    """The caller: a tenant (scoped) or the operator (``tenant is None``)."""

    tenant: str | None = None

    @property
    def is_operator(self) -> bool:
        return self.tenant is None

    def describe(self) -> str:
        return "operator" if self.tenant is None else f"tenant:{self.tenant}"


OPERATOR = Principal()


def resolve_principal(cfg: SinkSettings, api_key: str | None) -> Principal:
    """The principal an API key stands for; raises ``AuthError`` for an unknown or missing key."""
    admin = read_admin_key(cfg)
    if not api_key:
        raise AuthError(
            "this store needs an API key: a tenant's key, or the operator key "
            f"(sink.admin_key or the file {cfg.path(cfg.sink.admin_key_file)})"
        )
    if admin and hmac.compare_digest(api_key.encode(), admin.encode()):
        return OPERATOR
    for entry in cfg.tenant_keys:
        if hmac.compare_digest(api_key.encode(), entry.key.get_secret_value().encode()):
            return Principal(tenant=entry.tenant)
    raise AuthError("unknown API key")
