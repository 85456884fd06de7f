"""SinkConfig validation and who an API key stands for."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from app.config import parse_config
from sinks.admin_key import ensure_admin_key
from sinks.config import SinkConfig
from sinks.exceptions import AuthError
from sinks.principal import OPERATOR, Principal, resolve_principal
from sluice.errors import ConfigError


def test_bad_sink_settings_fail_with_the_field() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"sink": {"query_host": "0.0.0.0", "memory_limit": "lots", "batch_max_rows": 0}})
    text = str(err.value)
    assert "sink.query_host" in text and "loopback" in text
    assert "sink.memory_limit" in text and "sink.batch_max_rows" in text
    assert SinkConfig(query_host="localhost").query_host == "127.0.0.1"


def test_keys_resolve_to_tenants_or_the_operator(tmp_path: Path) -> None:
    keys = {"api_keys": [{"key": "k-acme", "tenant": "acme"}]}
    default = parse_config(
        {"proxy": keys, "sink": {"admin_key_file": str(tmp_path / "admin.key")}}
    ).sink_settings()
    with pytest.raises(AuthError, match="needs an API key"):  # closed by default, even before a key exists
        resolve_principal(default, None)
    made = ensure_admin_key(default)  # first start: a key file only its owner can read
    path = tmp_path / "admin.key"
    assert path.read_text().strip() == made and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert ensure_admin_key(default) == made
    assert resolve_principal(default, made) == OPERATOR
    with pytest.raises(AuthError, match="needs an API key"):
        resolve_principal(default, None)
    assert resolve_principal(default, "k-acme") == Principal("acme")
    with pytest.raises(AuthError, match="unknown API key"):
        resolve_principal(default, "k-other")
    locked = parse_config({"proxy": keys, "sink": {"admin_key": "adm-s3cret"}}).sink_settings()
    with pytest.raises(AuthError, match="needs an API key"):
        resolve_principal(locked, None)
    assert resolve_principal(locked, "adm-s3cret").is_operator
    assert "adm-s3cret" not in locked.sink.model_dump_json()
