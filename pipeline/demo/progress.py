"""The quiet demo's live progress display: traffic sent, trajectories landed, versions, rewards.

A background thread polls the store (the same query client `sluice query` uses) once a second for the
demo's trajectories; the traffic counters come from the driver's ``RunReport`` as calls complete. Rendered
with rich's ``Live``: redrawn in place on a terminal, printed once at the end elsewhere (CI logs, pipes).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

from pipeline.demo.summary import id_list, rows
from pipeline.demo.traffic import RunReport, Scenario
from sinks.clients import connect_client
from sinks.settings import SinkSettings

PROGRESS_SQL = (
    "SELECT count(*) AS landed, count(*) FILTER (WHERE rewarded) AS rewarded, "
    "coalesce(sum(versions), 0) AS versions, count(*) FILTER (WHERE eligibility = 'train') AS eligible "
    "FROM trajectories WHERE trajectory_id IN ({ids})"
)


class DemoProgress:
    """``with DemoProgress(...) as p:`` shows the display until the block ends; ``p.phase`` names the step."""

    def __init__(
        self,
        store: SinkSettings,
        scenarios: list[Scenario],
        planned_calls: int,
        report: RunReport,
        console: Console,
    ):
        self.sink, self.scenarios, self.planned_calls, self.report = store, scenarios, planned_calls, report
        self.console = console
        self.phase = "sending agent traffic"
        self.store: dict[str, Any] = {"landed": 0, "rewarded": 0, "versions": 0, "eligible": 0}
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._poller = threading.Thread(target=self._poll, name="demo-progress", daemon=True)
        self._live = Live(self, console=console, refresh_per_second=4, transient=False)

    def __enter__(self) -> DemoProgress:
        self._live.__enter__()
        self._poller.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        self._stop.set()
        self._poller.join(5)
        self._poll_once()
        self.phase = "done" if exc_type is None else "stopped"
        self._live.refresh()
        self._live.__exit__(None, None, None)
        self.console.line()  # off a terminal the last frame ends without one

    @property
    def ids(self) -> list[str]:
        """The demo's trajectory ids as they are now: a named id becomes its tenant-scoped form, and a
        history-linked one the proxy's, with the first answer."""
        return [sc.trajectory_id for sc in self.scenarios]

    def _poll(self) -> None:
        while not self._stop.wait(1.0):
            self._poll_once()

    def _poll_once(self) -> None:
        try:
            client = connect_client(self.sink, api_key=None)
            try:
                got = rows(client, PROGRESS_SQL.format(ids=id_list(self.ids)))
            finally:
                client.close()
        except Exception:  # noqa: BLE001 - the sink may still be starting; the next poll retries
            return
        if got:
            self.store = {k: int(v or 0) for k, v in got[0].items()}

    def __rich__(self) -> Table:
        r, s, n = self.report, self.store, len(self.ids)
        table = Table(show_header=False, box=None, padding=(0, 2))
        table.add_row("[bold]sluice demo[/]", f"{self.phase} ({time.monotonic() - self.started:.0f}s)")
        table.add_row(
            "traffic sent",
            f"{_bar(r.calls_ok, self.planned_calls)} {r.calls_ok}/{self.planned_calls} LLM calls"
            + (f", [red]{len(r.calls_failed)} failed[/]" if r.calls_failed else "")
            + f", {r.rewards_posted} rewards posted",
        )
        table.add_row("landed", f"{_bar(s['landed'], n)} {s['landed']}/{n} trajectories in DuckDB")
        table.add_row("versions", f"{s['versions']} (late rewards and feedback make new versions)")
        table.add_row(
            "rewards", f"{s['rewarded']} trajectories rewarded, {s['eligible']} eligible for training"
        )
        return table


def _bar(done: int, total: int, width: int = 20) -> str:
    filled = 0 if total <= 0 else min(width, round(width * done / total))
    return "[green]" + "█" * filled + "[/][dim]" + "░" * (width - filled) + "[/]"
