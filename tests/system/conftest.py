"""What the system tests share: the ``Stack`` handle on a running embedded stack (own broker, tiny model,
proxy, stages, sink) and the configs they start one from."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from pathlib import Path

import yaml

from app.config import DEFAULT_CONFIG, SluiceConfig
from app.status import collect, render
from infra.broker import free_port
from pipeline.demo.summary import id_list, landed, rows, wait_until
from pipeline.demo.traffic import AgentDriver, RunReport, plan
from pipeline.supervisor import Supervisor
from sinks.clients import connect_client


class Stack:
    def __init__(self, cfg: SluiceConfig, path: Path, sup: Supervisor, log: io.StringIO) -> None:
        self.cfg, self.path, self.sup, self.log = cfg, path, sup, log
        self.root = f"http://{cfg.proxy.host}:{cfg.proxy.port}"
        self.keys = {k.key.get_secret_value(): k.tenant for k in cfg.proxy.api_keys}

    def send(self, count: int, seed: int) -> RunReport:
        """Run ``count`` scripted agent trajectories through the proxy (real openai SDK)."""

        async def go() -> RunReport:
            driver = AgentDriver(self.root, "sluice-tiny", max_tokens=12)
            try:
                report = await driver.run(plan(self.keys, count, seed=seed))
                await driver.send_late_rewards(report)
                return report
            finally:
                await driver.aclose()

        return asyncio.run(go())

    def run_agents(self, count: int, seed: int) -> RunReport:
        """Like ``send``, but late rewards stay pending (``post_late_rewards`` sends them)."""

        async def go() -> RunReport:
            driver = AgentDriver(self.root, "sluice-tiny", max_tokens=12)
            try:
                return await driver.run(plan(self.keys, count, seed=seed))
            finally:
                await driver.aclose()

        return asyncio.run(go())

    def post_late_rewards(self, reports: list[RunReport]) -> list[str]:
        """Post the pending late rewards of ``reports``; returns their trajectory ids."""

        async def go() -> None:
            driver = AgentDriver(self.root, "sluice-tiny")
            try:
                for report in reports:
                    await driver.send_late_rewards(report)
            finally:
                await driver.aclose()

        late = [sc.trajectory_id for report in reports for sc in report.late_pending]
        asyncio.run(go())
        return late

    def stage_workers(self) -> list[str]:
        return [n for n in self.sup.names() if n.startswith("stages")]

    def query(self, sql: str) -> list[dict]:
        client = connect_client(self.cfg.sink_settings(), None)
        try:
            return rows(client, sql)
        finally:
            client.close()

    def wait(
        self,
        check: Callable[[], bool],
        what: str,
        timeout_s: float = 120,
        seen: Callable[[], object] | None = None,
    ) -> None:
        """``wait_until``, failing the test with what ``seen`` last returned, the tail of the stack's log
        and its status."""
        try:
            wait_until(check, timeout_s, what)
        except TimeoutError as err:
            last = f"\nlast seen: {self._describe(seen)}" if seen else ""
            tail = "\n".join(self.log.getvalue().splitlines()[-80:])
            raise AssertionError(f"{err}{last}\n{tail}\n{self.where_events_wait()}") from None

    @staticmethod
    def _describe(seen: Callable[[], object]) -> object:
        try:
            return seen()
        except Exception as err:  # a diagnosis must not hide the failure it explains
            return f"could not be read: {err!r}"

    def where_events_wait(self) -> str:
        """``sluice status`` of the stack (lag per group and topic, spool depth, pending joins): which hop
        holds what has not landed."""
        try:
            return "sluice status at the timeout:\n" + render(collect(self.cfg, interval_s=0.5))
        except Exception as err:  # a diagnosis must not hide the failure it explains
            return f"sluice status failed: {err!r}"

    def wait_landed(self, ids: list[str], timeout_s: float = 120) -> None:
        client = connect_client(self.cfg.sink_settings(), None)
        try:
            self.wait(lambda: landed(client, ids), f"trajectories {ids} to land", timeout_s)
        finally:
            client.close()

    def step_counts(self, ids: list[str]) -> dict[str, tuple[int, int]]:
        """Per trajectory: (step_count of its latest version, step rows stored)."""
        got = self.query(
            "SELECT trajectory_id, step_count, (SELECT count(*) FROM steps s WHERE s.trajectory_id = "
            f"t.trajectory_id) AS stored_steps FROM trajectories t WHERE trajectory_id IN ({id_list(ids)})"
        )
        return {r["trajectory_id"]: (r["step_count"], r["stored_steps"]) for r in got}

    def assert_exactly_once(self, report: RunReport, timeout_s: float = 120) -> None:
        """Every trajectory sent is in DuckDB once, with every step once."""
        self.wait_complete(report, timeout_s)
        self.assert_no_duplicates(report)

    def wait_complete(self, report: RunReport, timeout_s: float = 120) -> None:
        """Every trajectory sent has landed with every step. A step that reaches the join after its
        trajectory was emitted (seen once after a broker freeze under CPU load) makes a new version
        rather than rewriting history: wait for the version that has them all."""
        ids = [sc.trajectory_id for sc in report.scenarios]
        want = {sc.trajectory_id: (sc.turns, sc.turns) for sc in report.scenarios}
        self.wait_landed(ids, timeout_s)
        self.wait(
            lambda: self.step_counts(ids) == want,
            f"(step_count, stored steps) = {want}",
            timeout_s,
            seen=lambda: self.step_counts(ids),
        )

    def assert_no_duplicates(self, report: RunReport) -> None:
        ids = [sc.trajectory_id for sc in report.scenarios]
        dup = self.query(
            f"SELECT trajectory_id, step_index, count(*) AS n FROM steps WHERE trajectory_id IN ({id_list(ids)}) "
            "GROUP BY ALL HAVING count(*) > 1"
        )
        assert dup == []


def stack_config(tmp: Path, **proxy: object) -> Path:
    """The embedded default, on free ports and with every file under ``tmp``, with ``proxy`` settings on
    top."""
    data = yaml.safe_load(DEFAULT_CONFIG.read_text())
    model_port = free_port()
    data["broker"]["bootstrap_servers"] = f"127.0.0.1:{free_port()}"
    data["topics"]["partitions"] = 2
    data["proxy"]["port"] = free_port()
    data["proxy"]["backends"][0]["base_url"] = f"http://127.0.0.1:{model_port}/v1"
    data["proxy"]["spool_dir"] = str(tmp / "spool")
    data["proxy"].update(proxy)
    data["stages"]["data_dir"] = str(tmp / "stages")
    data["stages"]["workers"] = 2  # one is killed mid-stream while the other keeps its partitions
    data["sink"] = {**data.get("sink", {}), "database": str(tmp / "sluice.duckdb"), "query_port": free_port()}
    data["rewards"] = {**data["rewards"], "wait_s": 2}
    data["up"] = {
        "log_file": str(tmp / "logs" / "up.log"),
        "state_file": str(tmp / "up.json"),
        "ready_timeout_s": 300,
    }
    data.setdefault("trainer", {})["output_dir"] = str(tmp / "trainer")
    path = tmp / "sluice.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def late_reward_config(tmp: Path, **proxy: object) -> Path:
    """``stack_config`` where a trajectory waits an hour for its reward (the late reviewer's grade comes
    long after the end), with ``proxy`` settings on top."""
    path = stack_config(tmp, **proxy)
    data = yaml.safe_load(path.read_text())
    data["rewards"]["wait_s"] = 3600
    data["up"]["drain_timeout_s"] = 120
    path.write_text(yaml.safe_dump(data))
    return path


def live_trainer_config(tmp: Path, trainer: dict | None = None, live: dict | None = None) -> Path:
    """``stack_config`` with one stage worker and `sluice train` in live mode on the tiny model, pushing to
    the stack's model server; ``trainer`` and ``live`` override the trainer's and its live section's keys."""
    path = stack_config(tmp)
    data = yaml.safe_load(path.read_text())
    data["stages"]["workers"] = 1
    model_url = data["proxy"]["backends"][0]["base_url"].removesuffix("/v1")
    data["trainer"] = {
        **data["trainer"],
        "mode": "live",
        "promotion": "direct",
        "models": ["sluice-tiny*"],
        "policy_servers": [model_url],
        "group_size": 4,
        "max_staleness": 1,
        "learning_rate": 1e-3,
        "poll_timeout_s": 0.5,
        "progress": False,
        **(trainer or {}),
        "live": {"group_wait_s": 5, "update_samples": 4, "update_wait_s": 1, "default_scope": "shared",
                 **(live or {})},
    }  # fmt: skip
    path.write_text(yaml.safe_dump(data))
    return path
