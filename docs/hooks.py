"""MkDocs hooks: the generated parts of the docs, rendered from the code and the recorded runs at build time.

``<!-- generated: config-reference -->`` becomes the configuration reference (``gen_config_reference``,
from the pydantic models) and ``<!-- generated: benchmarks -->`` the benchmark tables (``render_benchmarks``,
from ``docs/benchmarks/*.jsonl``). Loaded by ``mkdocs.yml`` (``hooks:``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent
for p in (str(DOCS.parent), str(DOCS)):  # this checkout's code first, then the generators beside this file
    if p not in sys.path:
        sys.path.insert(0, p)

import gen_config_reference  # noqa: E402
import render_benchmarks  # noqa: E402


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace each generation marker on a page with what it stands for."""
    if "<!-- generated: config-reference -->" in markdown:
        markdown = markdown.replace("<!-- generated: config-reference -->", gen_config_reference.render())
    if "<!-- generated: benchmarks -->" in markdown:
        runs = render_benchmarks.load_runs()
        tables = render_benchmarks.summary_table(runs, "") + "\n" + render_benchmarks.history_sections(runs)
        markdown = markdown.replace("<!-- generated: benchmarks -->", tables)
    return markdown
