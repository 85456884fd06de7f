"""Tenant from the key only; headers narrow consent and data class but never widen them (pure)."""

from __future__ import annotations

import pytest
from starlette.datastructures import Headers

from pipeline.proxy.config import ProxyConfig
from pipeline.proxy.exceptions import ApiError
from pipeline.proxy.surfaces.auth import KeyResolver
from pipeline.proxy.surfaces.context import HeaderRecorder

CFG = ProxyConfig(
    api_keys=[
        {"key": "k-open", "tenant": "a", "data_class": "internal", "consent_training": True},
        {"key": "k-closed", "tenant": "b", "data_class": "confidential", "consent_training": False},
    ],
    header_allowlist=["user-agent", "authorization", "x-sluice-session-id"],
)


def test_bearer_and_x_api_key() -> None:
    keys = KeyResolver(CFG)
    assert keys.caller(Headers({"authorization": "Bearer k-open"})).tenant == "a"
    assert keys.caller(Headers({"x-api-key": "k-closed"})).tenant == "b"
    with pytest.raises(ApiError) as err:
        keys.caller(Headers({"authorization": "Bearer nope", "x-sluice-tenant": "a"}))
    assert err.value.status == 401
    open_cfg = CFG.model_copy(update={"require_api_key": False})
    assert KeyResolver(open_cfg).caller(Headers({})).tenant == "anonymous"


def test_headers_narrow_never_widen() -> None:
    keys = KeyResolver(CFG)
    c = keys.caller(
        Headers(
            {
                "authorization": "Bearer k-open",
                "x-sluice-consent": "false",
                "x-sluice-data-class": "restricted",
            }
        )
    )
    assert (c.consent_training, c.data_class) == (False, "restricted")
    c = keys.caller(
        Headers({"x-api-key": "k-closed", "x-sluice-consent": "true", "x-sluice-data-class": "public"})
    )
    assert (c.consent_training, c.data_class) == (False, "confidential")
    c = keys.caller(Headers({"x-api-key": "k-open", "x-sluice-subject-id": "u1, u2"}))
    assert c.subject_ids == ("u1", "u2")
    with pytest.raises(ApiError):
        keys.caller(Headers({"x-api-key": "k-open", "x-sluice-consent": "maybe"}))


def test_credentials_are_never_recorded_even_if_allowlisted() -> None:
    recorded = HeaderRecorder(CFG).record(
        Headers({"authorization": "Bearer k-open", "user-agent": "ua", "cookie": "c"})
    )
    assert recorded == {"user-agent": "ua"}
