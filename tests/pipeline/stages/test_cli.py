"""``sluice stages``: registered, documented, and a bad config fails fast with the field and reason."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from app.cli import cli


def test_help_lists_the_options() -> None:
    res = CliRunner().invoke(cli, ["stages", "--help"])
    assert res.exit_code == 0, res.output
    assert "--config" in res.output and "--worker-index" in res.output


def test_bad_config_exits_2_with_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("rewards: {combine: weighted}\nstages: {store: leveldb}\n")
    res = CliRunner().invoke(cli, ["stages", "--config", str(bad)])
    assert res.exit_code == 2
    assert "stages.store" in res.output
    assert "combine=weighted needs source_weights" in res.output
