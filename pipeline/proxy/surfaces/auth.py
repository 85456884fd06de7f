"""Surfaces: who is calling (the tenant from the API key) and the governance the key allows.

The key arrives as ``Authorization: Bearer KEY`` (OpenAI SDK, and the Anthropic SDK with
``anthropic-version``), ``x-api-key: KEY`` (older Anthropic clients, CLI harnesses) or ``api-key: KEY``
(the Azure OpenAI SDK). Keys are compared by
SHA-256 digest, so the lookup table holds no key text. Headers may narrow what the key allows (consent
off, a stricter data class) but never widen it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

from pipeline.proxy.config import ApiKeyConfig, ProxyConfig
from pipeline.proxy.exceptions import ApiError

ANONYMOUS = "anonymous"


@dataclass(frozen=True, slots=True)
class Caller:
    tenant: str
    data_class: str
    consent_training: bool | None
    subject_ids: tuple[str, ...] = ()


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


def presented_key(headers: Mapping[str, str]) -> str | None:
    auth = headers.get("authorization")
    if auth:
        scheme, _, value = auth.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
    key = headers.get("x-api-key") or headers.get("api-key")
    return key.strip() if key else None


class KeyResolver:
    def __init__(self, config: ProxyConfig) -> None:
        self.config = config
        self._keys: dict[bytes, ApiKeyConfig] = {
            _digest(k.key.get_secret_value()): k for k in config.api_keys
        }
        self._rank = {name: i for i, name in enumerate(config.data_classes)}

    def caller(self, headers: Mapping[str, str]) -> Caller:
        """The caller, or 401 when the key is missing/unknown and keys are required."""
        key = presented_key(headers)
        entry = self._keys.get(_digest(key)) if key else None
        if entry is None and self.config.require_api_key:
            if key is None:
                raise ApiError(
                    401,
                    "missing API key: send Authorization: Bearer KEY, x-api-key: KEY or api-key: KEY",
                    code="missing_api_key",
                )
            raise ApiError(401, "invalid API key", code="invalid_api_key")
        tenant = entry.tenant if entry else ANONYMOUS
        data_class = (entry.data_class if entry else None) or self.config.default_data_class
        consent = entry.consent_training if entry else None
        return Caller(
            tenant=tenant,
            data_class=self._narrow_class(data_class, headers.get(self.config.data_class_header)),
            consent_training=self._narrow_consent(consent, headers.get(self.config.consent_header)),
            subject_ids=self._subjects(headers.get(self.config.subject_header)),
        )

    def _narrow_class(self, current: str, asked: str | None) -> str:
        if asked is None:
            return current
        asked = asked.strip().lower()
        if asked not in self._rank:
            raise ApiError(
                400,
                f"unknown data class {asked!r} in {self.config.data_class_header}: one of {self.config.data_classes}",
                param=self.config.data_class_header,
            )
        return asked if self._rank[asked] > self._rank[current] else current

    def _narrow_consent(self, current: bool | None, asked: str | None) -> bool | None:
        if asked is None:
            return current
        value = asked.strip().lower()
        if value in ("false", "0", "no", "off", "deny", "denied"):
            return False
        if value in ("true", "1", "yes", "on", "allow", "granted"):
            return current  # a header can not grant what the key does not
        raise ApiError(
            400,
            f"{self.config.consent_header} must be true or false, got {asked!r}",
            param=self.config.consent_header,
        )

    @staticmethod
    def _subjects(raw: str | None) -> tuple[str, ...]:
        if not raw:
            return ()
        return tuple(s.strip() for s in raw.split(",") if s.strip())[:32]
