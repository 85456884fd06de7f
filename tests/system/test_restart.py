"""A clean restart of `sluice up` on the embedded broker keeps what is pending.

Trajectories end and wait for a reward due "tomorrow" (``rewards.wait_s`` one hour), the whole stack stops
cleanly (Ctrl-C: the proxy stops first, the stages and the sink drain the broker's topics), and a new
`sluice up` starts on the same files with a new, empty broker. The late rewards posted after the restart
join the trajectories they belong to — with every step — and what had landed before lands nowhere twice.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from app.config import load_config
from app.up import running_stack
from pipeline.demo.summary import id_list, landed
from sinks.clients import connect_client
from tests.system.conftest import Stack, late_reward_config

pytestmark = pytest.mark.slow


def test_pending_reward_joins_survive_a_restart_of_the_stack(tmp_path: Path) -> None:
    path = late_reward_config(tmp_path)
    cfg = load_config(path)
    first_log = io.StringIO()
    with running_stack(cfg, path, log_path=tmp_path / "logs" / "up.log", sink=first_log) as sup:
        stack = Stack(cfg, path, sup, first_log)
        report = stack.run_agents(12, seed=21)
        assert report.calls_failed == []
        late = [sc.trajectory_id for sc in report.late_pending]
        want = {sc.trajectory_id: (sc.turns, sc.turns) for sc in report.late_pending}
        rewarded = [sc.trajectory_id for sc in report.scenarios if sc.reward in ("early", "feedback")]
        assert late and rewarded
        stack.wait_landed(rewarded, timeout_s=180)
    assert "drained" in first_log.getvalue() and "not drained" not in first_log.getvalue()
    # what the store holds once the first stack has stopped (read from the file, after the drain): a step
    # or feedback reward that reaches the join after its trajectory was emitted makes a new version, so a
    # snapshot taken while the stack runs may miss one. A late trajectory is held for its reward, or
    # emitted already with what it had (a later reward then makes a new version): either way the stages
    # hold its join state
    got = stack.query(
        f"SELECT trajectory_id, version FROM trajectories WHERE trajectory_id IN ({id_list(late)})"
    )
    before = {r["trajectory_id"]: r["version"] for r in got}
    kept = stack.query(
        f"SELECT trajectory_id, version FROM trajectory_versions WHERE trajectory_id IN ({id_list(rewarded)})"
    )

    second_log = io.StringIO()
    with running_stack(cfg, path, log_path=tmp_path / "logs" / "up.log", sink=second_log) as sup:
        stack = Stack(cfg, path, sup, second_log)
        assert "carried pending stage state into the broker" in second_log.getvalue()
        stack.post_late_rewards([report])
        client = connect_client(cfg.sink_settings(), None)
        try:
            stack.wait(
                lambda: landed(client, late, {i: before.get(i, 0) + 1 for i in late}),
                "a new version of every late-rewarded trajectory",
                180,
                seen=lambda: stack.query(
                    f"SELECT trajectory_id, version FROM trajectories WHERE trajectory_id IN ({id_list(late)})"
                ),
            )
        finally:
            client.close()
        stack.wait(
            lambda: stack.step_counts(late) == want,
            f"every step of {late}",
            120,
            seen=lambda: stack.step_counts(late),
        )
        graded = stack.query(
            f"SELECT DISTINCT trajectory_id FROM rewards WHERE value = 0.5 AND trajectory_id IN ({id_list(late)})"
        )
        assert sorted(r["trajectory_id"] for r in graded) == sorted(late)
        # traffic after the restart lands too, and nothing from before is stored twice
        after = stack.run_agents(3, seed=22)
        assert after.calls_failed == []
        stack.wait_landed(
            [sc.trajectory_id for sc in after.scenarios if sc.reward in ("early", "feedback")], 180
        )
        stack.assert_no_duplicates(report)
        # the restart re-emitted nothing: the rewarded trajectories have exactly the versions they had
        again = stack.query(
            f"SELECT trajectory_id, version FROM trajectory_versions WHERE trajectory_id IN ({id_list(rewarded)})"
        )
        assert sorted(map(str, again)) == sorted(map(str, kept))
