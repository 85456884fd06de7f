"""Which request headers may be recorded: the allowlist, minus anything sensitive (always)."""

from __future__ import annotations

from collections.abc import Mapping

from pipeline.proxy.config import ProxyConfig

ALWAYS_SENSITIVE = frozenset(
    {"authorization", "x-api-key", "api-key", "cookie", "set-cookie", "proxy-authorization"}
)


class HeaderRecorder:
    def __init__(self, config: ProxyConfig) -> None:
        sensitive = ALWAYS_SENSITIVE | {h.lower() for h in config.sensitive_headers}
        self.allowed = tuple(h.lower() for h in config.header_allowlist if h.lower() not in sensitive)
        self.sensitive = sensitive

    def record(self, headers: Mapping[str, str]) -> dict[str, str]:
        out = {}
        for name in self.allowed:
            value = headers.get(name)
            if value is not None:
                out[name] = value[:512]
        return out
