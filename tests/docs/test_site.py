"""The docs site builds with ``mkdocs build --strict`` (a broken link, a page missing from the nav or a failed
generator fails it), and its generated pages hold what the code and the recorded runs say."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytest.importorskip("mkdocs", reason="mkdocs not installed: pip install -e '.[docs]' (infra/install.sh does)")
pytest.importorskip("material", reason="mkdocs-material not installed: pip install -e '.[docs]'")


def test_site_builds_strict_with_generated_pages(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=540,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    config_page = (site / "configuration" / "index.html").read_text()
    assert "generated: config-reference" not in config_page
    # every field of one section, as the model declares it, with its description
    from governance.config import RewardJoinConfig

    for name in RewardJoinConfig.model_fields:
        assert f"<code>{name}</code>" in config_page
    assert "A trajectory with no end event ends after this idle time." in config_page
    bench_page = (site / "benchmarks" / "index.html").read_text()
    assert "generated: benchmarks" not in bench_page
    assert (
        'id="proxy_peers"' in bench_page and "python -m bench.proxy_cpu --rounds 5 --duration 3" in bench_page
    )
