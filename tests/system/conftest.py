"""One real embedded-default stack (own broker, tiny model, proxy, stages, sink) per system test module."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from infra.broker import free_port
from pipeline.demo.summary import landed, rows
from pipeline.demo.traffic import AgentDriver, RunReport, plan
from pipeline.supervisor import Supervisor
from pipeline.up import running_stack
from sinks.clients import connect_client
from sluice.config import DEFAULT_CONFIG, SluiceConfig, load_config


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

    def stage_workers(self) -> list[str]:
        return [n for n in self.sup.names() if n.startswith("stages")]

    def query(self, sql: str) -> list[dict]:
        client = connect_client(self.cfg, None)
        try:
            return rows(client, sql)
        finally:
            client.close()

    def wait_landed(self, ids: list[str], timeout_s: float = 120) -> None:
        import time

        client = connect_client(self.cfg, None)
        try:
            deadline = time.monotonic() + timeout_s
            while not landed(client, ids):
                assert time.monotonic() < deadline, f"not landed within {timeout_s}s: {ids}"
                time.sleep(0.5)
        finally:
            client.close()

    def assert_exactly_once(self, report: RunReport) -> None:
        """Every trajectory sent is in DuckDB once, with every step once."""
        ids = [sc.trajectory_id for sc in report.scenarios]
        self.wait_landed(ids)
        id_sql = ", ".join(f"'{i}'" for i in ids)
        got = self.query(
            f"SELECT trajectory_id, step_count, (SELECT count(*) FROM steps s WHERE s.trajectory_id = t.trajectory_id) "
            f"AS stored_steps FROM trajectories t WHERE trajectory_id IN ({id_sql})"
        )
        assert len(got) == len(ids)
        turns = {sc.trajectory_id: sc.turns for sc in report.scenarios}
        for r in got:
            assert r["step_count"] == turns[r["trajectory_id"]] == r["stored_steps"], r
        dup = self.query(
            f"SELECT trajectory_id, step_index, count(*) AS n FROM steps WHERE trajectory_id IN ({id_sql}) "
            "GROUP BY ALL HAVING count(*) > 1"
        )
        assert dup == []


def stack_config(tmp: Path) -> Path:
    """The embedded default, on free ports and with every file under ``tmp``."""
    data = yaml.safe_load(DEFAULT_CONFIG.read_text())
    model_port = free_port()
    data["broker"]["bootstrap_servers"] = f"127.0.0.1:{free_port()}"
    data["topics"]["partitions"] = 2
    data["proxy"]["port"] = free_port()
    data["proxy"]["backends"][0]["base_url"] = f"http://127.0.0.1:{model_port}/v1"
    data["proxy"]["spool_dir"] = str(tmp / "spool")
    data["stages"]["data_dir"] = str(tmp / "stages")
    data["stages"]["workers"] = 2  # one is killed mid-stream while the other keeps its partitions
    data["sink"] = {**data.get("sink", {}), "database": str(tmp / "sluice.duckdb"), "query_port": free_port()}
    data["rewards"] = {**data["rewards"], "wait_s": 2}
    data["up"] = {"log_file": str(tmp / "logs" / "up.log")}
    data.setdefault("trainer", {})["output_dir"] = str(tmp / "trainer")
    path = tmp / "sluice.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("stack")
    path = stack_config(tmp)
    cfg = load_config(path)
    log = io.StringIO()
    with running_stack(cfg, path, log_path=tmp / "logs" / "up.log", sink=log) as sup:
        yield Stack(cfg, path, sup, log)
