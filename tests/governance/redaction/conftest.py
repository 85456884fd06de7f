"""Redaction test fixtures: engines are built once per session (Presidio import and build take seconds)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from governance.config import RedactionConfig
from governance.redaction import Redactor

TEST_OPERATORS = {"SECRET": "drop", "CREDIT_CARD": "mask", "US_SSN": "hash"}


@pytest.fixture(scope="session")
def redactor_factory() -> Callable[..., Redactor]:
    """Redactor for a config (cached per distinct config, engines built once each)."""
    cache: dict[str, Redactor] = {}

    def make(**fields: object) -> Redactor:
        cfg = RedactionConfig(**fields)
        key = cfg.model_dump_json() + cfg.hash_key.get_secret_value()
        if key not in cache:
            cache[key] = Redactor.from_config(cfg)
        return cache[key]

    return make


@pytest.fixture(scope="session")
def redactor(redactor_factory: Callable[..., Redactor]) -> Redactor:
    """Placeholders by default; secrets dropped, cards masked, SSNs hashed (like infra/sluice.yaml)."""
    return redactor_factory(operators=TEST_OPERATORS, hash_key="test-hash-key")


@pytest.fixture(scope="session")
def plain(redactor_factory: Callable[..., Redactor]) -> Redactor:
    """Every entity gets a placeholder: findings are easy to read off the output."""
    return redactor_factory(hash_key="test-hash-key")
