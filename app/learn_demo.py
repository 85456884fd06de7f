"""``sluice demo --learn``: agents solve verifiable tasks through the proxy on SmolLM2-135M-Instruct, a
checker posts their rewards (a share of them late), the live trainer learns from that traffic and pushes
each new policy version to the model server, and the reward per policy version is shown as a table (the
``sluice query`` below) and a PNG plot.

    sluice demo --learn [--minutes 20] [--tasks extraction,arithmetic,tool_call,order_lookup] [--plot var/learn/reward.png]
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path

import httpx
import yaml
from rich.console import Console
from rich.table import Table

from app.config import DEFAULT_CONFIG, SluiceConfig
from app.options import load_or_exit
from app.up import running_stack
from pipeline.demo.summary import rows, wait_until
from pipeline.learn.agents import TaskAgent
from pipeline.learn.arm import Arm
from pipeline.learn.checker import Checker
from pipeline.learn.report import plot, points_sql, rewarded_with_prefix, version_table_sql
from pipeline.learn.settings import AGENT_MODEL, LearnSettings, learning_config
from pipeline.learn.tasks import build_tasks
from sinks.clients import connect_client

PREFIX = "learn-"


def write_learning_config(config_path: Path | None, out_dir: Path, settings: LearnSettings) -> Path:
    src = config_path or DEFAULT_CONFIG
    data = learning_config(yaml.safe_load(Path(src).read_text()), out_dir, settings)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "sluice-learn.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def serving_version(url: str) -> str:
    try:
        return httpx.get(f"{url}/v1/policy", timeout=5).json()["serving_version"]
    except (httpx.HTTPError, KeyError, ValueError):
        return "?"


async def drive(cfg: SluiceConfig, arm: Arm, minutes: float, console: Console) -> None:
    """Run the arm for ``minutes``, printing progress each minute; then post the late rewards still due."""
    server = cfg.trainer.policy_server_urls()[0]
    until = time.time() + 60 * minutes
    runner = asyncio.create_task(arm.run(until))
    seen = 0
    while not runner.done():
        await asyncio.wait({runner}, timeout=60)
        new = arm.graded[seen:]
        seen = len(arm.graded)
        recent = sum(g.reward for g in new) / len(new) if new else float("nan")
        version = await asyncio.to_thread(serving_version, server)
        console.print(
            f"{time.strftime('%H:%M:%S')}  answers {seen:5d}  reward (last minute) {recent:.2f}  "
            f"serving policy v{version}"
        )
    await runner
    await arm.checker.drain()
    await arm.agent.aclose()
    await arm.checker.aclose()


def print_table(console: Console, result: list[dict]) -> None:
    t = Table("policy_version", "answers", "mean_reward", "first_answer", "last_answer",
              title="reward per policy version")  # fmt: skip
    for r in result:
        t.add_row(
            *(str(r[k]) for k in ("policy_version", "answers", "mean_reward", "first_answer", "last_answer"))
        )
    console.print(t)


def run_learn_demo(
    config_path: Path | None, minutes: float, task_names: list[str], plot_path: Path | None, timeout_s: float
) -> None:
    for noisy in ("httpx", "httpx2", "openai"):  # one line per request would drown the progress lines
        logging.getLogger(noisy).setLevel(logging.WARNING)
    console = Console()
    base = load_or_exit(config_path)
    out_dir = base.path(Path("var/learn"))
    path = write_learning_config(config_path, out_dir, LearnSettings())
    cfg = load_or_exit(path)
    key = next(
        k
        for k in cfg.proxy.api_keys
        if k.consent_training and cfg.eligibility.tenant(k.tenant).training_opt_in
    )
    tasks = build_tasks(task_names)
    proxy = f"http://{cfg.proxy.host}:{cfg.proxy.port}"
    console.print(
        f"[bold]sluice demo --learn[/]: config {path}; tasks {', '.join(task_names)}; {minutes:g} min"
    )
    log_path = out_dir / "up.log"
    console.print(f"service logs: {log_path}")
    with (
        open(os.devnull, "w") as quiet,
        running_stack(cfg, path, with_trainer=True, log_path=log_path, sink=quiet),
    ):
        agent = TaskAgent(proxy, key.key.get_secret_value(), AGENT_MODEL, tasks, temperature=1.0, arm="learn")
        checker = Checker(proxy, {t.name: t for t in tasks}, late_fraction=0.25, late_delay_s=20.0)
        arm = Arm(agent, checker, group_size=cfg.trainer.group_size, groups_in_flight=2, group_by="task")
        asyncio.run(drive(cfg, arm, minutes, console))
        client = connect_client(cfg.sink_settings(), None)
        try:
            # ids are scoped by tenant at rest (acme~learn-...): the same filter as the report's
            landed_sql = f"SELECT count(*) AS n FROM trajectories t WHERE {rewarded_with_prefix(PREFIX)}"
            wait_until(
                lambda: rows(client, landed_sql)[0]["n"] >= 0.95 * len(arm.graded),
                timeout_s,
                "the graded trajectories to land",
            )
            sql = version_table_sql(PREFIX)
            result = rows(client, sql)
            points = rows(client, points_sql(PREFIX))
        finally:
            client.close()
    console.print(f'\n[bold]$ sluice query[/] "{sql}"')
    print_table(console, result)
    target = plot_path or out_dir / "reward_by_version.png"
    plot({"live traffic": points}, target, title=f"sluice demo --learn: {cfg.trainer.model}")
    console.print(f"plot written to {target}")
