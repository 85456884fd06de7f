"""Benchmark tables rendered from the runs kept in ``docs/benchmarks/<benchmark>.jsonl``.

Each line of those files is one run of one benchmark (``BenchmarkRun``: date, machine, commit, command,
figures, targets), appended when a run is recorded, never edited. Nothing here holds a figure: the README's
table (between its ``benchmarks`` markers) and the docs page are both rendered from the files, the latest
run of each benchmark first, so a figure cannot go stale by hand.

    python docs/render_benchmarks.py            # rewrite the README's table from the files
    python docs/render_benchmarks.py --check    # exit 1 when the README's table differs from the files
"""

from __future__ import annotations

import argparse
import json
import operator
import sys
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

DOCS = Path(__file__).resolve().parent
RUNS_DIR = DOCS / "benchmarks"
README = DOCS.parent / "README.md"
START, END = "<!-- benchmarks:start (python docs/render_benchmarks.py) -->", "<!-- benchmarks:end -->"
OPS = {"<=": (operator.le, "≤"), ">=": (operator.ge, "≥")}


class BenchmarkRun(BaseModel):
    """One recorded run of one benchmark."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    benchmark: str = Field(description="The benchmark's name: its file, and `python -m bench.<name>` mostly.")
    date: str = Field(description="When it ran: YYYY-MM-DD, with HH:MM (UTC) where it was recorded.")
    machine: str = Field(description="Where it ran.")
    commit: str = Field(description="The commit that recorded the run (the code measured, or its README).")
    command: str = Field(description="The exact command.")
    figures: dict[str, float] = Field(description="The run's figures, by the names its JSON line uses.")
    targets: dict[str, str] = Field(default_factory=dict, description="Targets by figure: '<= 2', '>= 0.9'.")
    headline: list[str] = Field(description="The figures the one-line summary shows.")
    notes: str = ""


def load_runs(runs_dir: Path = RUNS_DIR) -> dict[str, list[BenchmarkRun]]:
    """Every benchmark's runs, oldest first, benchmarks by name."""
    out: dict[str, list[BenchmarkRun]] = {}
    for path in sorted(runs_dir.glob("*.jsonl")):
        runs = [BenchmarkRun(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
        if any(r.benchmark != path.stem for r in runs):
            raise ValueError(f"{path}: every line must name benchmark {path.stem!r}")
        out[path.stem] = sorted(runs, key=lambda r: r.date)
    return out


def number(value: float) -> str:
    """A figure as recorded: integers with thousands separators, other values as written."""
    if float(value).is_integer() and abs(value) >= 1:
        return f"{int(value):,}"
    return f"{value:g}"


def verdict(run: BenchmarkRun, name: str) -> str:
    """``≤ 2 ✓`` for a figure with a target, else an empty string."""
    target = run.targets.get(name)
    if target is None:
        return ""
    op, bound = target.split()
    check, sign = OPS[op]
    met = check(run.figures[name], float(bound))
    return f"{sign} {bound} {'✓' if met else '✗'}"


def summary(run: BenchmarkRun) -> tuple[str, str]:
    """The headline figures and their targets, each as one table cell."""
    figures = ", ".join(f"`{n}` **{number(run.figures[n])}**" for n in run.headline)
    targets = ", ".join(v for v in (verdict(run, n) for n in run.headline) if v)
    return figures, targets or "—"


def summary_table(runs: dict[str, list[BenchmarkRun]], link: str) -> str:
    """One line per benchmark: its latest run's headline figures, targets, date and a link to its history."""
    lines = ["| benchmark | latest figures | target | run |", "|---|---|---|---|"]
    for name, history in runs.items():
        last = history[-1]
        figures, targets = summary(last)
        lines.append(f"| [{name}]({link}#{name}) | {figures} | {targets} | {last.date[:10]} |")
    return "\n".join(lines) + "\n"


def history_sections(runs: dict[str, list[BenchmarkRun]]) -> str:
    """Per benchmark: the latest command and machine, then every recorded run, newest first."""
    parts = []
    for name, history in runs.items():
        last = history[-1]
        parts.append(f"### {name}\n\n`{last.command}` on {last.machine}.\n")
        names = list(dict.fromkeys(n for r in history for n in r.figures))
        head = "| date | commit | " + " | ".join(f"`{n}`" for n in names) + " | notes |"
        rows = [head, "|" + "---|" * (len(names) + 3)]
        for r in reversed(history):
            cells = []
            for n in names:
                cell = number(r.figures[n]) if n in r.figures else ""
                mark = verdict(r, n) if n in r.figures else ""
                cells.append(f"{cell} ({mark})" if mark else cell)
            command = "" if r.command == last.command else f"`{r.command}`; "
            rows.append(f"| {r.date} | `{r.commit}` | " + " | ".join(cells) + f" | {command}{r.notes} |")
        parts.append("\n".join(rows) + "\n")
    return "\n".join(parts)


def readme_with_table(readme: str, table: str) -> str:
    """The README text with the table between its markers replaced."""
    head, sep, rest = readme.partition(START)
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise ValueError("README.md has no benchmarks markers")
    return f"{head}{START}\n{table}{END}{tail}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="Exit 1 when the README's table is out of date.")
    args = ap.parse_args()
    text = README.read_text()
    new = readme_with_table(text, summary_table(load_runs(), "docs/benchmarks.md"))
    if args.check:
        sys.exit(0 if new == text else 1)
    README.write_text(new)


if __name__ == "__main__":
    main()
