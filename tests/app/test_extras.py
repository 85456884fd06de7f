"""The install hint for a package of an optional extra names the extra of pyproject.toml that installs it,
and the demo's own path needs no such package."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

from app.extras import EXTRA_OF_MODULE, missing_extra_hint

REPO = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
# module -> the distribution that ships it, where the names differ
DISTRIBUTION = {"opentelemetry": "opentelemetry-sdk"}


def names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0].lower() for r in requirements}


def test_every_mapped_module_is_in_its_extra_and_not_in_the_base_install() -> None:
    base = names(PROJECT["dependencies"])
    for module, extra in EXTRA_OF_MODULE.items():
        dist = DISTRIBUTION.get(module, module)
        assert dist in names(PROJECT["optional-dependencies"][extra]), f"{dist} is not in the {extra} extra"
        assert dist not in base, f"{dist} is a base dependency: the hint would never be needed"


def test_the_hint_names_the_extra_only_for_its_modules() -> None:
    hint = missing_extra_hint(ModuleNotFoundError("No module named 'ray'", name="ray"))
    assert hint is not None and "sluice-rl[train]" in hint
    otel = missing_extra_hint(ModuleNotFoundError("x", name="opentelemetry.sdk.trace"))
    assert otel is not None and "sluice-rl[otel]" in otel
    assert missing_extra_hint(ModuleNotFoundError("x", name="duckdb")) is None


def test_the_services_of_the_demo_import_no_package_of_an_extra() -> None:
    """`sluice demo` runs on the base install: its services' modules must not need the train or otel extra."""
    blocker = (
        "import importlib, importlib.abc, sys\n"
        f"BLOCK = {sorted(EXTRA_OF_MODULE)!r}\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name.split('.')[0] in BLOCK:\n"
        "            raise ModuleNotFoundError(name, name=name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "for m in sys.argv[1:]:\n"
        "    importlib.import_module(m)\n"
    )
    modules = [
        "app.cli", "app.commands.demo", "app.up", "app.commands.train", "trainers.serving.server",
        "app.commands.proxy", "pipeline.proxy.server", "app.commands.stages", "pipeline.stages.app",
        "app.commands.sink", "sinks.ingest", "pipeline.stages.table_carry", "app.drain",
    ]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", blocker, *modules], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
