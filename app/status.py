"""``sluice status``: the pipeline at a glance.

Reads only what the services already publish: consumer-group offsets and high watermarks from the broker
(lag per topic, and throughput as the change of committed offsets over ``--interval`` seconds), the proxy's
and the stage workers' Prometheus ``/metrics`` (spool depth, pending reward joins), the sink's position, and
the trainer's JSONL metrics log (last step and reward), and each policy server's ``GET /v1/policy`` (the
version it serves, against the learner's). A service that is down shows as ``down``.

    sluice status [--interval 2] [--json]
"""

from __future__ import annotations

import json
import time
import urllib.request
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

import click
from confluent_kafka import Consumer, KafkaException, TopicPartition

from app.config import SluiceConfig
from app.options import config_option, load_or_exit
from app.status_services import judge_services, stage_app_dir
from pipeline.health import Backlog
from pipeline.stages.heartbeat import pid_alive, read_heartbeats
from pipeline.topic_ends import end_offsets
from trainers.serving.policy_view import PolicyView, policy_view, render_policy


@dataclass
class GroupLag:
    group: str
    topic: str
    committed: int
    end: int
    rate_per_s: float | None = None

    @property
    def lag(self) -> int:
        return max(0, self.end - self.committed)


@dataclass
class Status:
    broker: str
    topics: dict[str, int] = field(default_factory=dict)  # topic -> records (sum of high watermarks)
    groups: list[GroupLag] = field(default_factory=list)
    proxy: dict[str, float] | str = "down"
    stages: dict[str, float] | str = "down"
    sink: dict[str, float] | str = "down"
    trainer: dict[str, float] | str = "not running"
    services: dict[str, dict] = field(default_factory=dict)  # every service: state, detail, restarts
    policy: PolicyView | None = None  # serving version per policy server, and the learner's


def parse_prometheus(text: str, prefix: str = "sluice_") -> dict[str, float]:
    """Sum samples per metric name (labels folded) for metrics starting with ``prefix``."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#") or not line.startswith(prefix):
            continue
        name_labels, _, value = line.rpartition(" ")
        name = name_labels.split("{", 1)[0]
        try:
            out[name] = out.get(name, 0.0) + float(value)
        except ValueError:
            continue
    return out


def scrape(url: str) -> dict[str, float] | str:
    try:
        with urllib.request.urlopen(url, timeout=1.5) as resp:
            return parse_prometheus(resp.read().decode())
    except OSError:
        return "down"


def group_offsets(cfg: SluiceConfig, group: str, topic: str) -> tuple[int, int]:
    """(sum of committed offsets, sum of high watermarks) of ``group`` on ``topic``."""
    consumer = Consumer(
        cfg.broker.consumer_config(group, **{"client.id": f"sluice-status-{uuid.uuid4().hex[:6]}"})
    )
    try:
        md = consumer.list_topics(topic, timeout=5)
        parts = [TopicPartition(topic, p) for p in md.topics[topic].partitions]
        committed = consumer.committed(parts, timeout=5)
        done = sum(max(tp.offset, 0) for tp in committed)
        end = sum(end_offsets(cfg.broker, [(tp.topic, tp.partition) for tp in parts], timeout_s=5).values())
        return done, end
    finally:
        consumer.close()


def consumer_groups(cfg: SluiceConfig) -> list[tuple[str, str]]:
    """(group, input topic) pairs of the consumers that commit offsets to Kafka (the sink keeps its offsets
    in DuckDB, with its rows: its position and lag come from its /metrics)."""
    t = cfg.topics
    from pipeline.stages.names import app_id as stages_group  # topic prefix + stages.app_id

    pairs = [
        (stages_group(cfg.topics, cfg.stages), t.name("steps_raw")),
        (stages_group(cfg.topics, cfg.stages), t.name("rewards_raw")),
    ]
    if cfg.trainer.enabled:
        pairs.append((cfg.trainer.consumer_group, t.name("trajectories_train")))
    return pairs


def trainer_progress(cfg: SluiceConfig) -> dict[str, float] | str:
    path = cfg.path(cfg.trainer.output_dir) / "metrics.jsonl"
    if not Path(path).exists():
        return "not running"
    last = None
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                last = line
    if last is None:
        return "no steps yet"
    row = json.loads(last)
    return {k: row[k] for k in ("step", "policy_version", "reward_mean", "samples_per_s") if k in row}


def collect(cfg: SluiceConfig, interval_s: float = 2.0) -> Status:
    status = Status(broker=cfg.broker.bootstrap_servers)
    sink_url = f"http://127.0.0.1:{cfg.sink.query_port}/metrics"
    sink_before = scrape(sink_url)
    t0 = time.monotonic()
    broker_ok = True
    try:
        first = {pair: group_offsets(cfg, *pair) for pair in consumer_groups(cfg)}
        if interval_s > 0:
            time.sleep(interval_s)
        for (group, topic), (done0, _) in first.items():
            done, end = group_offsets(cfg, group, topic)
            rate = (done - done0) / interval_s if interval_s > 0 else None
            status.groups.append(GroupLag(group, topic, done, end, rate))
        for logical, name in cfg.topics.all().items():
            status.topics[logical] = group_offsets(cfg, f"sluice-status-{uuid.uuid4().hex[:6]}", name)[1]
    except KafkaException as err:
        broker_ok = False
        status.broker = f"{cfg.broker.bootstrap_servers} (unreachable: {err})"
    status.proxy = scrape(f"http://{cfg.proxy.host}:{cfg.proxy.port}/metrics")
    status.sink = scrape(sink_url)
    status.stages = stage_counters(cfg)
    status.trainer = trainer_progress(cfg)
    elapsed = time.monotonic() - t0
    status.services = {
        name: asdict(health)
        for name, health in judge_services(
            cfg,
            broker_ok,
            stage_backlog(cfg, status.groups),
            status.sink,
            _rate(sink_before, status.sink, "sluice_sink_records_total", elapsed) if interval_s > 0 else None,
            status.proxy,
        ).items()
    }
    status.policy = policy_view(cfg.trainer_settings())
    return status


def stage_backlog(cfg: SluiceConfig, groups: list[GroupLag]) -> Backlog | None:
    """The stage group's backlog over its input topics (None when the broker could not be read)."""
    from pipeline.stages.names import app_id

    mine = [g for g in groups if g.group == app_id(cfg.topics, cfg.stages)]
    if not mine:
        return None
    rates = [g.rate_per_s for g in mine]
    rate = None if any(r is None for r in rates) else sum(r for r in rates if r is not None)
    return Backlog(sum(g.lag for g in mine), rate)


def stage_counters(cfg: SluiceConfig) -> dict[str, float] | str:
    """The stage workers' counters: from ``stages.web_port`` when set, else summed over the heartbeat
    files of the live workers on this machine."""
    if cfg.stages.web_port:
        return scrape(f"http://127.0.0.1:{cfg.stages.web_port}/metrics")
    beats = [b for b in read_heartbeats(stage_app_dir(cfg)) if pid_alive(b.pid)]
    if not beats:
        return "no worker on this machine"
    counts: dict[str, float] = {"workers": float(len(beats))}
    counts["pending_joins"] = float(sum(b.pending_joins for b in beats))
    for b in beats:
        for k, v in b.counts.items():
            counts[k] = counts.get(k, 0.0) + v
    return counts


def _rate(before: dict[str, float] | str, after: dict[str, float] | str, key: str, s: float) -> float | None:
    if not isinstance(before, dict) or not isinstance(after, dict) or s <= 0:
        return None
    return max(0.0, after.get(key, 0.0) - before.get(key, 0.0)) / s


def render_services(services: dict[str, dict]) -> list[str]:
    """One line per service: its state, restarts, and why."""
    lines = []
    for name, svc in services.items():
        last = f" (last: {svc['last_exit']})" if svc.get("last_exit") else ""
        lines.append(
            f"service     {name:<11} {svc.get('state', '?'):<10} restarts={svc.get('restarts', 0):<3} "
            f"{svc.get('detail', '')}{last}"
        )
    return lines


def render(status: Status) -> str:
    lines = [
        f"broker      {status.broker}",
        "topics      " + ", ".join(f"{k}={v}" for k, v in status.topics.items()),
    ]
    for g in status.groups:
        rate = f"{g.rate_per_s:.1f}/s" if g.rate_per_s is not None else "-"
        lines.append(
            f"consumer    {g.group:<16} {g.topic:<34} lag={g.lag:<6} done={g.committed:<8} rate={rate}"
        )

    def show(name: str, value: dict[str, float] | str, keys: tuple[str, ...]) -> None:
        if isinstance(value, str):
            lines.append(f"{name:<11} {value}")
            return
        picked = {k: v for k, v in value.items() if any(s in k for s in keys)} or value
        lines.append(f"{name:<11} " + ", ".join(f"{k}={v:g}" for k, v in sorted(picked.items())))

    show("proxy", status.proxy, ("spool", "requests_total", "publish", "errors"))
    show("stages", status.stages, ("workers", "pending", "_in", "emitted", "deadlettered"))
    show("sink", status.sink, ("rows", "dead", "offset", "lag"))
    show("trainer", status.trainer, ("step", "reward", "version"))
    lines += render_services(status.services)
    if status.policy is not None:
        lines += render_policy(status.policy)
    return "\n".join(lines)


@click.command("status")
@config_option
@click.option("--interval", default=2.0, show_default=True, help="Seconds between the two offset samples.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def status_command(config_path: Path | None, interval: float, as_json: bool) -> None:
    """Per-topic lag, throughput, pending joins, dead letters, spool depth, sink position, trainer step,
    the policy version each policy server serves and the learner's."""
    cfg = load_or_exit(config_path)
    status = collect(cfg, interval)
    if as_json:
        data = asdict(status)
        for g, row in zip(status.groups, data["groups"], strict=True):
            row["lag"] = g.lag
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(render(status))
