"""Shared fixtures: one real Tansu broker for the whole test session, unique topics per test."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.config import SluiceConfig, parse_config
from infra.broker import LocalBroker

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAY_DISABLE_IMPORT_WARNING", "1")


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    """A real Kafka-protocol broker (Tansu, memory storage) on a free loopback port."""
    log = tmp_path_factory.mktemp("broker") / "tansu.log"
    with LocalBroker(log_path=log) as b:
        yield b


def make_config(broker: LocalBroker, tmp_path: Path, **sections: dict) -> SluiceConfig:
    """A config on the test broker with a unique topic prefix and paths under tmp_path."""
    data: dict = {
        "broker": {"bootstrap_servers": broker.bootstrap_servers, "profile": "tansu", "embedded": False},
        "topics": {"prefix": f"t{uuid.uuid4().hex[:10]}.", "partitions": 2},
        "proxy": {"spool_dir": str(tmp_path / "spool")},
        "stages": {"data_dir": str(tmp_path / "stages")},
        "sink": {"database": str(tmp_path / "sluice.duckdb")},
    }
    for key, value in sections.items():
        data[key] = {**data.get(key, {}), **value}
    return parse_config(data, base_dir=tmp_path)


@pytest.fixture
def config(broker: LocalBroker, tmp_path: Path) -> SluiceConfig:
    """Config for one test: unique topics (created), files under tmp_path."""
    from pipeline.topics import create_topics

    cfg = make_config(broker, tmp_path)
    create_topics(cfg.broker, cfg.topics)
    return cfg
