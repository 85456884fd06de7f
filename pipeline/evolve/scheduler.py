"""The control plane on a schedule (``sluice up --evolve`` runs it as a supervised service).

Every ``evolve.interval_s`` one pass of the loop runs: running canaries are read and decided, then
pending proposals are gated while the limits allow. A pass that fails (broker or sink briefly away) is
logged and the next one runs on time: the ledger and the assignments are on the topics, so nothing a
failed pass did is lost or done twice.
"""

from __future__ import annotations

import logging
import threading

from pipeline.evolve.entries import PassReport
from pipeline.evolve.settings import EvolveSettings
from pipeline.evolve.wiring import open_runner

log = logging.getLogger("sluice.evolve")


def serve(cfg: EvolveSettings, stop: threading.Event, passes: int | None = None) -> list[PassReport]:
    """Run passes until ``stop`` is set (or ``passes`` ran); returns the reports of the passes."""
    reports: list[PassReport] = []
    with open_runner(cfg, actor="sluice-evolve-scheduler") as runner:
        while not stop.is_set():
            try:
                report = runner.run_pass()
                reports.append(report)
                for a in report.actions:
                    log.info("evolve %s %s %s", a.proposal_id, a.what, a.detail)
            except Exception as err:  # a pass that fails must not stop the schedule
                log.warning("evolve pass failed: %s: %s", type(err).__name__, err)
            if passes is not None and len(reports) >= passes:
                break
            stop.wait(cfg.evolve.interval_s)
    return reports
