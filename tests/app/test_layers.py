"""The layers: ``app`` composes everything and nothing below imports it; the sink and the trainer never
import each other; governance imports no plumbing."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def imported_packages(package: str) -> dict[str, set[str]]:
    """Top-level package of every import in ``package`` -> the files that import it."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], set()).add(str(path.relative_to(ROOT)))
    return found


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("sluice", {"app", "pipeline", "governance", "sinks", "trainers", "infra"}),
        ("governance", {"app", "pipeline", "sinks", "trainers", "infra", "faust", "confluent_kafka"}),
        ("sinks", {"app", "trainers"}),
        ("trainers", {"app", "sinks"}),
        ("pipeline", {"app"}),
    ],
)
def test_nothing_below_imports_what_sits_above(package: str, forbidden: set[str]) -> None:
    found = imported_packages(package)
    assert {name: files for name, files in found.items() if name in forbidden} == {}
