"""The README stays a front door: short, readable lines, and a benchmark table that is the one the recorded
runs render (``docs/render_benchmarks.py``), never a hand-edited copy."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, REPO / "docs" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_is_short_with_readable_lines() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) < 400, f"README.md has {len(lines)} lines; move details to a docs page"
    long = [(n, len(line)) for n, line in enumerate(lines, 1) if len(line) > 200]
    assert not long, f"README.md lines over 200 characters (line, length): {long}"


def test_readme_starts_with_the_two_setup_commands() -> None:
    text = README.read_text()
    first_block = text.split("```", 2)[1]
    assert "bash infra/quickstart.sh" in first_block and "bash infra/test.sh" in first_block
    assert "exec bash infra/test.sh" in (REPO / ".ci" / "run").read_text()


def test_readme_benchmark_table_is_the_rendered_one() -> None:
    render = load("render_benchmarks")
    text = README.read_text()
    table = render.summary_table(render.load_runs(), "docs/benchmarks.md")
    assert render.readme_with_table(text, table) == text, "run: python docs/render_benchmarks.py"
    runs = render.load_runs()
    assert len(table.splitlines()) == len(runs) + 2  # one line per benchmark under the header


def test_every_recorded_run_has_its_provenance_and_known_targets() -> None:
    render = load("render_benchmarks")
    for path in sorted((REPO / "docs" / "benchmarks").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            run = render.BenchmarkRun(**json.loads(line))
            assert run.date and run.machine and run.commit and run.command.startswith("python -m bench.")
            assert set(run.headline) <= set(run.figures), f"{path.name}: a headline figure is not recorded"
            assert set(run.targets) <= set(run.figures), f"{path.name}: a target names no figure"
            for target in run.targets.values():
                op, bound = target.split()
                assert op in render.OPS, f"{path.name}: unknown comparison in {target!r}"
                float(bound)  # a number, or the line is malformed


def test_readme_links_point_at_files_that_exist() -> None:
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text())
    local = [link for link in links if not link.startswith(("http://", "https://"))]
    assert local, "the README links to its docs pages"
    missing = [link for link in local if not (REPO / link).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"
