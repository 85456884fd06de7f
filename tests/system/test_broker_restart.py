"""A SIGKILLed embedded broker comes back as a new, empty cluster, and nothing pending is lost.

The embedded broker keeps its topics in memory. While agents work, three kinds of pending data are
built up on purpose before the broker is killed:

- joins waiting for a reward due "tomorrow" (``rewards.wait_s`` one hour): only the stage tables hold them;
- versions the join stage sent while the sink was frozen (SIGSTOP): on the audited topic only;
- events the proxy delivered while every stage worker was frozen: on the raw topics only;
- the control plane's state: a ledger entry and the overlay assignment it made.

Then the broker dies by SIGKILL. The supervisor of `sluice up` stops the broker's consumers, starts a new
broker, carries the stage tables into it (rewriting the states whose last version never reached the
store), and starts the consumers again; the proxy, which kept every event until it landed, sends the
unlanded ones to the new cluster. Afterwards the late rewards are posted, and every trajectory lands with
every step exactly once, the late ones with their reward, and the ledger and the overlay assignment are
on the new broker (replayed from the control journal).
"""

from __future__ import annotations

import io
import os
import signal
import threading
import time
from pathlib import Path

import pytest
import yaml

from app.config import load_config
from app.up import control_journal, running_stack
from pipeline.control_journal import read_journal
from pipeline.demo.summary import id_list
from pipeline.demo.traffic import RunReport
from pipeline.evolve.ledger_state import read_ledger
from pipeline.evolve.publish import EvolutionPublisher
from sluice.evolution import LedgerEntry, OverlayAssignment
from sluice.step_refs import is_step_record_key
from tests.kafka_helpers import read_whole_topic
from tests.system.conftest import Stack, late_reward_config

pytestmark = pytest.mark.slow


def _send(stack: Stack, count: int, seed: int) -> RunReport:
    report = stack.run_agents(count, seed)
    assert report.calls_failed == []
    return report


def _audited_records(stack: Stack) -> int:
    """Trajectory versions on the audited topic: its records less the step records (``step_record_key``)."""
    records = read_whole_topic(stack.cfg.broker, stack.cfg.topics.name("trajectories_audited"))
    return sum(1 for key, _ in records if not is_step_record_key(key))


def _completed(report: RunReport) -> int:
    """Trajectories of ``report`` the join stage emits without waiting for a late reward."""
    return sum(1 for sc in report.scenarios if sc.reward in ("early", "feedback"))


def _config(tmp_path: Path) -> Path:
    """``late_reward_config`` whose services get 5 s, not 15, to stop: a stage worker whose broker died
    hangs in its stop until SIGKILL, and the supervisor waits on the held workers one after another."""
    path = late_reward_config(tmp_path, land_interval_s=0.5)
    data = yaml.safe_load(path.read_text())
    data["up"]["stop_grace_s"] = 5.0
    path.write_text(yaml.safe_dump(data))
    return path


def test_broker_killed_with_pending_joins_unstored_versions_and_unlanded_events(tmp_path: Path) -> None:
    path = _config(tmp_path)
    cfg = load_config(path)
    log = io.StringIO()
    with running_stack(cfg, path, log_path=tmp_path / "logs" / "up.log", sink=log) as sup:
        stack = Stack(cfg, path, sup, log)
        stop = threading.Event()
        supervisor = threading.Thread(target=sup.supervise, args=(stop, 0.2), daemon=True)
        supervisor.start()
        frozen: list[str] = []
        try:
            # 1. joins waiting for tomorrow's reward; what completed has landed
            waiting = _send(stack, 8, seed=31)
            assert waiting.late_pending
            stack.wait_landed(
                [sc.trajectory_id for sc in waiting.scenarios if sc.reward in ("early", "feedback")]
            )

            # 2. versions sent while the sink is frozen: only the audited topic has them
            before = _audited_records(stack)
            frozen.append("sink")
            sup.signal("sink", signal.SIGSTOP)
            unstored = _send(stack, 6, seed=32)
            assert _completed(unstored) > 0
            deadline = time.monotonic() + 90
            while _audited_records(stack) < before + _completed(unstored) and time.monotonic() < deadline:
                time.sleep(0.5)
            assert _audited_records(stack) >= before + _completed(unstored), "the join stage emitted them"

            # 3. events delivered while every stage worker is frozen: only the raw topics have them
            for name in stack.stage_workers():
                frozen.append(name)
                sup.signal(name, signal.SIGSTOP)
            unlanded = _send(stack, 6, seed=33)

            # 4. the control plane's state: a ledger entry and the overlay assignment it made
            publisher = EvolutionPublisher(cfg.broker, cfg.topics)
            entry = LedgerEntry(proposal_id="p-restart", kind="decision", surface="memory", tenant="acme")
            publisher.record(entry)
            publisher.assign(OverlayAssignment(tenant="acme", ledger_entry_id=entry.entry_id))
            journal = control_journal(cfg).path("overlays")
            stack.wait(
                lambda: any(True for _ in read_journal(journal)), "the journal to hold the assignment", 30
            )

            # 5. the broker dies; the supervisor brings a new one and the consumers back
            os.kill(sup.pid("broker"), signal.SIGKILL)
        finally:
            for name in frozen:
                sup.signal(name, signal.SIGCONT)
        try:
            stack.wait(lambda: "started again:" in log.getvalue(), "the broker's consumers to come back", 420)
            assert "carried pending stage state into the broker" in log.getvalue()

            late = stack.post_late_rewards([waiting, unstored, unlanded])
            for report in (waiting, unstored, unlanded):
                stack.wait_complete(report, 240)
                stack.assert_no_duplicates(report)
            stack.wait(
                lambda: (
                    len(
                        stack.query(
                            "SELECT DISTINCT trajectory_id FROM rewards WHERE value = 0.5 "
                            f"AND trajectory_id IN ({id_list(late)})"
                        )
                    )
                    == len(late)
                ),
                f"the late reward of each of {late}",
                180,
            )
            # a version number is stored once: what was re-emitted is not stored twice
            twice = stack.query(
                "SELECT trajectory_id, version, count(*) AS n FROM trajectory_versions GROUP BY ALL "
                "HAVING count(*) > 1"
            )
            assert twice == []
            assert sup.restarts()["broker"] == 1
            # the control plane's state came back with the new broker
            assert [
                e.entry_id for e in read_ledger(cfg.broker, cfg.topics) if e.proposal_id == "p-restart"
            ] == [entry.entry_id]
            assert publisher.read_assignments()["acme/*"].ledger_entry_id == entry.entry_id
        finally:
            stop.set()
            supervisor.join(10)
