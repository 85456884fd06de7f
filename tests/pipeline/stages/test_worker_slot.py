"""Worker data slots: one per live process, reused after it dies."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.stages.exceptions import StagesError
from pipeline.stages.worker_slot import acquire_slot


def test_slots_are_exclusive_and_reused(tmp_path: Path) -> None:
    a = acquire_slot(tmp_path / "stages")
    b = acquire_slot(tmp_path / "stages")
    assert (a.index, b.index) == (0, 1)
    assert a.datadir == tmp_path / "stages" / "worker-0" and a.datadir.is_dir()
    with pytest.raises(StagesError, match="slot 1 is taken"):
        acquire_slot(tmp_path / "stages", 1)
    a.release()
    assert acquire_slot(tmp_path / "stages").index == 0


def test_slot_of_a_killed_process_is_free(tmp_path: Path) -> None:
    code = (
        "import sys, time; from pathlib import Path; from pipeline.stages.worker_slot import acquire_slot; "
        f"s = acquire_slot(Path({str(tmp_path)!r})); print(s.index, flush=True); time.sleep(60)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "0"
        assert acquire_slot(tmp_path).index == 1
    finally:
        proc.kill()
        proc.wait()
    assert acquire_slot(tmp_path, 0).index == 0
