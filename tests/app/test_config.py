"""Config loading: the sample validates; every bad field is reported with its path and reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli import cli
from app.config import DEFAULT_CONFIG, load_config
from sluice.errors import ConfigError


def test_sample_config_validates() -> None:
    cfg = load_config(DEFAULT_CONFIG)
    assert cfg.broker.profile == "tansu"
    assert cfg.proxy.backend_for("sluice-tiny-1").name == "local-cpu"
    for profile in ("tansu", "kafka"):
        conf = cfg.broker.model_copy(update={"profile": profile}).producer_config()
        assert "batch.num.messages" not in conf  # batches of many records: end offsets come from fetches
        assert conf["allow.auto.create.topics"] is False  # topics only from create_topics


def test_stage_workers_batch_their_output() -> None:
    """Faust's own default (no linger) sends whatever a stage has queued at once; the broker config gives
    its producer a linger, which reaches the aiokafka producer Faust builds."""
    import faust

    broker = load_config(DEFAULT_CONFIG).broker
    app = faust.App("linger-check", **broker.faust_settings())
    assert broker.stage_linger_ms > 0
    assert app.conf.producer_linger == pytest.approx(broker.stage_linger_ms / 1000)
    assert app.producer.linger_ms == broker.stage_linger_ms
    off = broker.model_copy(update={"stage_linger_ms": 0}).faust_settings()
    assert faust.App("no-linger", **off).producer.linger_ms == 0


def test_every_bad_field_is_reported(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "broker: {profile: redpanda}\n"
        "topics: {partitions: 0}\n"
        "proxy: {port: 99999, backends: [{name: a}], surprise: 1}\n"
    )
    with pytest.raises(ConfigError) as info:
        load_config(bad)
    problems = "\n".join(info.value.problems)
    assert "broker.profile" in problems
    assert "topics.partitions" in problems
    assert "proxy.port" in problems
    assert "proxy.backends.0.base_url: Field required" in problems
    assert "proxy.surprise: Extra inputs are not permitted" in problems


def test_config_check_cli_exit_codes(tmp_path: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(cli, ["config", "check", str(DEFAULT_CONFIG)])
    assert ok.exit_code == 0, ok.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("broker: [1, 2\n")
    res = runner.invoke(cli, ["config", "check", str(bad)])
    assert res.exit_code == 2
    assert "not valid YAML" in res.output


def test_unset_env_reference_is_an_error(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("redaction: {hash_key: '${SLUICE_TEST_UNSET_VAR}'}\n")
    with pytest.raises(ConfigError, match="SLUICE_TEST_UNSET_VAR"):
        load_config(f)


def test_secrets_are_masked_in_config_show() -> None:
    res = CliRunner().invoke(cli, ["config", "show"])
    assert res.exit_code == 0, res.output
    assert "sk-sluice-acme" not in res.output
    assert "**********" in res.output


def test_deploy_configs_validate(monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    root = DEFAULT_CONFIG.parent
    monkeypatch.setenv("SLUICE_HASH_KEY", "k")
    monkeypatch.setenv("SLUICE_KEY_DEFAULT", "sk-x")
    monkeypatch.setenv("SLUICE_ADMIN_KEY", "sk-admin")
    compose = load_config(root / "compose" / "sluice.compose.yaml")
    assert compose.broker.profile == "kafka" and compose.local_model_port() is None
    docs = list(yaml.safe_load_all((root / "k8s" / "sluice.yaml").read_text()))
    config_map = next(d for d in docs if d["kind"] == "ConfigMap")
    embedded = yaml.safe_load(config_map["data"]["sluice.yaml"])
    from app.config import parse_config

    assert parse_config(embedded).topics.partitions == 12
