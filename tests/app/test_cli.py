"""The ``sluice`` command as a newcomer meets it: ``--version``, ``-h`` on every command, one-line
summaries, help on every option, the renamed commands and their old spellings, and ``sluice status``
against a stack that is not running (exit 1, no librdkafka noise)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner

from app.cli import cli
from app.config import DEFAULT_CONFIG
from infra.broker import free_port

ROOT = Path(__file__).resolve().parents[2]
SUMMARY_WIDTH = 60  # what `sluice -h` leaves a summary on an 80-column terminal


def sluice(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The real entry point in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("SLUICE_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=ROOT,
    )


def commands(
    cmd: click.Command, path: tuple[str, ...], ctx: click.Context
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every listed command under ``cmd``, with its path."""
    yield path, cmd
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from commands(sub, (*path, name), click.Context(sub, parent=ctx, info_name=name))


ALL = list(commands(cli, (), click.Context(cli, info_name="sluice")))


def test_version_and_h() -> None:
    version = sluice("--version")
    assert version.returncode == 0 and version.stdout.strip() == "sluice 0.1.0"
    short = sluice("-h")
    assert short.returncode == 0 and short.stdout == sluice("--help").stdout
    listed = short.stdout.split("Commands:", 1)[1].strip().splitlines()
    assert {line.split()[0] for line in listed} >= {"status", "train", "evolve", "config", "ui"}
    assert not [line for line in listed if line.endswith("...")], listed


@pytest.mark.parametrize("path", [p for p, _ in ALL if p], ids=lambda p: " ".join(p))
def test_every_command_takes_h_and_explains_itself(path: tuple[str, ...]) -> None:
    cmd = dict(ALL)[path]
    res = CliRunner().invoke(cli, [*path, "-h"])
    assert res.exit_code == 0 and "Usage:" in res.output, res.output
    summary = cmd.get_short_help_str(limit=SUMMARY_WIDTH)
    assert summary and not summary.endswith("..."), f"{' '.join(path)}: {summary!r}"
    silent = [p.name for p in cmd.params if isinstance(p, click.Option) and not p.hidden and not p.help]
    assert silent == [], f"{' '.join(path)}: options without help: {silent}"


def test_train_is_a_group_and_the_rollbacks_are_told_apart() -> None:
    runner = CliRunner()
    bare = runner.invoke(cli, ["train"])
    assert bare.exit_code == 0 and all(n in bare.output for n in ("run", "push", "rollback"))
    assert "--resume" not in bare.output  # the group's options serve only the older spelling
    weights = runner.invoke(cli, ["train", "rollback", "-h"]).output
    overlays = runner.invoke(cli, ["evolve", "rollback-overlay", "-h"]).output
    assert "weights" in weights.split("\n\n")[1] and "overlay" in overlays.split("\n\n")[1]
    old = runner.invoke(cli, ["evolve", "rollback", "-h"])  # the older name still runs, unlisted
    assert old.exit_code == 0 and "overlay" in old.output
    assert "rollback-overlay" in runner.invoke(cli, ["evolve", "-h"]).output
    assert "  rollback " not in runner.invoke(cli, ["evolve", "-h"]).output


def test_config_check_takes_config_and_the_older_path(tmp_path: Path) -> None:
    runner = CliRunner()
    for args in (["--config", str(DEFAULT_CONFIG)], [str(DEFAULT_CONFIG)]):
        res = runner.invoke(cli, ["config", "check", *args])
        assert res.exit_code == 0 and "ok" in res.output, res.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("proxy: {port: 99999}\n")
    res = runner.invoke(cli, ["config", "check", "--config", str(bad)])
    assert res.exit_code == 2 and "proxy.port" in res.output


def stopped_stack_config(tmp_path: Path) -> Path:
    """The default config with every service on a port nothing listens on, files under tmp_path."""
    data = yaml.safe_load(DEFAULT_CONFIG.read_text())
    model_port = free_port()
    data["broker"]["bootstrap_servers"] = f"127.0.0.1:{free_port()}"
    data["proxy"]["port"] = free_port()
    data["proxy"]["backends"][0]["base_url"] = f"http://127.0.0.1:{model_port}/v1"
    data["sink"] = {**data.get("sink", {}), "query_port": free_port()}
    data["trainer"] = {**data.get("trainer", {}), "serve": {"port": model_port}}
    path = tmp_path / "sluice.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_status_of_a_stopped_stack_says_so_and_exits_1(tmp_path: Path) -> None:
    res = sluice("status", "--interval", "0", "--config", str(stopped_stack_config(tmp_path)))
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    assert "librdkafka" not in out and "|FAIL|" not in out and "Connection refused" not in out, out
    lines = res.stdout.splitlines()
    assert lines[0] == "services"  # services first
    states = {
        line.split()[0]: line.split()[1]
        for line in lines[2:]
        if line.startswith("  ") and len(line.split()) > 1
    }
    assert states.get("broker") == "down" and states.get("proxy") == "down", res.stdout
    assert "unreachable" in next(line for line in lines if line.startswith("broker "))
    assert "_created" not in res.stdout and ".0," not in res.stdout
    as_json = sluice("status", "--interval", "0", "--json", "--config", str(stopped_stack_config(tmp_path)))
    assert as_json.returncode == 1 and '"healthy": false' in as_json.stdout
