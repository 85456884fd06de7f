"""A pending rebuild on disk: it reads back as written, erasure takes exactly the erased trajectories' rows
out of it (and the whole plan when it starts from a tainted version), a failed write leaves the plan
that was there whole, and erasure drops a dead writer's temporary file but never a live writer's."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from sluice.rebuild_files import (
    FOREIGN_STALE_S,
    PLAN_FILE,
    TMP_MARK,
    WEIGHTS_FILE,
    drop_partials,
    erase_from_plans,
    plan_dir,
    rebuild_root,
    remove_plan,
    writer_tag,
)
from trainers.live.rebuild_plan import RebuildPlan, read_plans, read_weights, write_plan
from trainers.live.samples import LiveRow, LiveSample


def _row(tid: str, step: int = 0) -> LiveRow:
    sample = LiveSample(
        trajectory_id=tid, version=1, step_index=step, prompt_ids=[1, 2], token_ids=[3, 4], logprobs=[-0.5, -1.5],
        reward=1.0, policy_version=2, group_key="g", baseline_key="b", tenant="acme",
    )  # fmt: skip
    return LiveRow(sample=sample, advantage=0.5, weight=0.8)


def _plan(scope: str = "acme", rebuilt_from: str = "acme.2") -> RebuildPlan:
    return RebuildPlan(
        scope=scope, version=5, rebuilt_from=rebuilt_from, rebuild_of=["acme.3", "acme.4", "acme.5"],
        rows_erased=2, rows_let_go=1,
        batches=[[_row("kept-a"), _row("gone-x"), _row("kept-b")], [_row("gone-x", 1), _row("gone-y")], [_row("kept-c")]],
    )  # fmt: skip


def _weights() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return {
        "layer.lora_A.weight": torch.randn(4, 8, generator=g),
        "layer.lora_B.weight": torch.randn(8, 4, generator=g),
    }


def test_a_plan_and_its_weights_read_back_as_written(tmp_path: Path) -> None:
    root = rebuild_root(tmp_path)
    plan, weights = _plan(), _weights()
    path = write_plan(root, plan, weights)
    assert path == plan_dir(root, "acme") / PLAN_FILE and path.parent.parent == tmp_path / "rebuild"
    assert read_plans(root) == [plan]
    back = read_weights(root, "acme")
    assert back.keys() == weights.keys() and all(torch.equal(back[n], t) for n, t in weights.items())
    assert remove_plan(root, "acme") == [path, path.parent / WEIGHTS_FILE]
    assert read_plans(root) == [] and not path.parent.exists()


def test_erasure_takes_exactly_the_erased_trajectories_rows_out_of_a_pending_plan(tmp_path: Path) -> None:
    root = rebuild_root(tmp_path)
    write_plan(root, _plan(), _weights())
    write_plan(root, _plan("globex", "globex.1"), _weights())
    rewritten, removed = erase_from_plans(root, {"gone-x", "elsewhere"})
    assert rewritten == [plan_dir(root, s) / PLAN_FILE for s in ("acme", "globex")] and removed == []
    for plan in read_plans(root):
        ids = [[r.sample.trajectory_id for r in b] for b in plan.batches]
        assert ids == [["kept-a", "kept-b"], ["gone-y"], ["kept-c"]]
        assert plan.rows_erased == 2 + 2  # two rows of gone-x, in two updates
        untouched = _plan(plan.scope, plan.rebuilt_from)
        assert plan.batches[0][0] == untouched.batches[0][0]  # the kept rows as they were
    assert erase_from_plans(root, {"gone-x"}) == ([], [])  # nothing of them left: nothing rewritten


def test_a_plan_that_starts_from_a_tainted_version_is_removed_whole(tmp_path: Path) -> None:
    root = rebuild_root(tmp_path)
    write_plan(root, _plan(), _weights())
    write_plan(root, _plan("globex", "globex.1"), _weights())
    rewritten, removed = erase_from_plans(root, {"gone-y"}, {"acme.2", "acme.3"})
    assert removed == [plan_dir(root, "acme") / PLAN_FILE, plan_dir(root, "acme") / WEIGHTS_FILE]
    assert rewritten == [plan_dir(root, "globex") / PLAN_FILE]
    assert [p.scope for p in read_plans(root)] == ["globex"]


def test_a_failed_write_leaves_the_plan_that_was_there_whole(tmp_path: Path) -> None:
    root = rebuild_root(tmp_path)
    plan, weights = _plan(), _weights()
    write_plan(root, plan, weights)
    bad = {"layer.lora_A.weight": "not a tensor"}
    with pytest.raises(AttributeError):
        write_plan(root, plan.model_copy(update={"rows_erased": 1}), bad)  # type: ignore[arg-type]
    assert read_plans(root) == [plan]
    assert torch.equal(read_weights(root, "acme")["layer.lora_A.weight"], weights["layer.lora_A.weight"])
    assert sorted(p.name for p in plan_dir(root, "acme").iterdir()) == [PLAN_FILE, WEIGHTS_FILE]


WRITER = """
import sys, torch
from pathlib import Path
from tests.trainers.live.test_rebuild_plan import _plan
from trainers.live.rebuild_plan import write_plan
root = Path(sys.argv[1])
weights = {"w": torch.zeros(4_000_000)}  # 16 MB: most of the writer's time is spent writing
n = 0
while True:
    write_plan(root, _plan().model_copy(update={"rows_let_go": n}), weights)
    n += 1
    if n == 1:
        print("written", flush=True)
"""


def test_a_writer_killed_mid_write_leaves_a_whole_plan_and_erasure_clears_its_partial_file(
    tmp_path: Path,
) -> None:
    """A writer rewriting a plan in a loop is killed (SIGKILL, no cleanup): the plan on disk reads whole;
    a partial temporary file a killed writer leaves is never read and goes with the next erasure."""
    root = rebuild_root(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(root)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[3],
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "written"
        time.sleep(0.5)
    finally:
        proc.kill()
        proc.wait(10)
    [plan] = read_plans(root)
    assert plan.model_copy(update={"rows_let_go": 1}) == _plan()
    assert read_weights(root, "acme")["w"].shape == (4_000_000,)
    # what a writer killed between its first bytes and the rename leaves: never read, cleared by erasure
    folder = plan_dir(root, "acme")
    partial = folder / f".{PLAN_FILE}{TMP_MARK}{proc.pid}.1@{socket.gethostname()}"  # the killed writer's
    partial.write_text(plan.model_dump_json()[:200])
    assert read_plans(root) == [plan]
    _, removed = erase_from_plans(root, {"gone-x"})
    assert partial in removed and not partial.exists()
    assert sorted(p.name for p in folder.iterdir()) == [PLAN_FILE, WEIGHTS_FILE]
    remove_plan(root, "acme")
    assert not folder.exists()


def test_an_erasure_during_a_live_write_leaves_its_temporary_file_and_the_write_lands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sink's erasure drops the temporary files of dead writers only: when it runs between a live
    writer's write and its rename, the file is kept and the rename puts it in place (no second write)."""
    import sluice.rebuild_files as files

    root = rebuild_root(tmp_path)
    real_replace, erasures, writes = files.os.replace, [], []

    def erasure_first(src: str, dst: str) -> None:
        writes.append(Path(src).name)
        if not erasures:  # the erasure lands while the temporary file waits for its rename
            erasures.append(erase_from_plans(root, {"gone-x"}))
            assert Path(src).exists()
        real_replace(src, dst)

    monkeypatch.setattr(files.os, "replace", erasure_first)
    plan, weights = _plan(), _weights()
    write_plan(root, plan, weights)
    assert erasures == [([], [])] and len(writes) == 2  # nothing dropped; one write per file
    assert read_plans(root) == [plan]
    assert all(torch.equal(read_weights(root, "acme")[n], t) for n, t in weights.items())


def test_drop_partials_keeps_a_live_writers_temporary_file_and_drops_a_dead_ones(tmp_path: Path) -> None:
    """Two real processes write: the temporary file of the one still running survives; once it is killed
    and reaped its file goes. A reused pid (same pid, another start time) and an old file from another
    host count as dead; a fresh one from another host is kept."""
    folder = tmp_path / "scope-acme"
    folder.mkdir()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(10)
    try:
        live_tmp = folder / f".{WEIGHTS_FILE}{TMP_MARK}{writer_tag(live.pid)}"
        dead_tmp = folder / f".{PLAN_FILE}{TMP_MARK}{dead.pid}.1@{socket.gethostname()}"
        reused = folder / f".{PLAN_FILE}{TMP_MARK}{writer_tag(live.pid).replace('.', '.9', 1)}"
        fresh_foreign = folder / f".{PLAN_FILE}{TMP_MARK}{live.pid}.5@another-host"
        old_foreign = folder / f".{WEIGHTS_FILE}{TMP_MARK}{live.pid}.6@another-host"
        for path in (live_tmp, dead_tmp, reused, fresh_foreign, old_foreign):
            path.write_bytes(b"partial")
        age = time.time() - FOREIGN_STALE_S - 60
        os.utime(old_foreign, (age, age))
        assert drop_partials(folder) == sorted([dead_tmp, reused, old_foreign])
        assert sorted(folder.iterdir()) == sorted([live_tmp, fresh_foreign])
    finally:
        live.kill()
        live.wait(10)
    assert drop_partials(folder) == [live_tmp]
