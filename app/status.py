"""``sluice status``: the pipeline at a glance.

Reads only what the services already publish: consumer-group offsets and high watermarks from the broker
(lag per topic, and throughput as the change of committed offsets over ``--interval`` seconds), the proxy's
and the stage workers' Prometheus ``/metrics`` (spool depth, pending reward joins), the sink's position, and
the trainer's JSONL metrics log (last step and reward), and each policy server's ``GET /v1/policy`` (the
version it serves, against the learner's), and, while the sink runs, the store's per-tenant counts and
per-tenant policies (the version each tenant is served now, its lineage, its reward by version). The
broker is probed with a plain socket first, so a stopped stack costs no librdkafka retries. A service that
is down shows as ``down`` and the command exits 1.

    sluice status [--interval 2] [--json]
"""

from __future__ import annotations

import json
import socket
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

import click
from confluent_kafka import Consumer, KafkaException, TopicPartition

from app.config import SluiceConfig
from app.options import config_option, load_or_exit
from app.status_metrics import Figures, figure, scrape
from app.status_render import render
from app.status_services import judge_services, stage_app_dir
from pipeline.health import Backlog
from pipeline.stages.heartbeat import pid_alive, read_heartbeats
from pipeline.topic_ends import end_offsets
from trainers.serving.policy_view import PolicyView, policy_view

# librdkafka logs every refused connection at level 3 (error); status says so once, in its own words.
QUIET_KAFKA = {"log_level": 2}


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
    broker_ok: bool = True
    topics: dict[str, int] = field(default_factory=dict)  # topic -> records (sum of high watermarks)
    groups: list[GroupLag] = field(default_factory=list)
    proxy: Figures | str = "down"
    stages: Figures | str = "down"
    sink: Figures | str = "down"
    trainer: Figures | str = "not running"
    tenants: list[dict] | str = "sink down"  # per tenant: trajectories, rewarded, steps (from the store)
    # per tenant: the policy version it is served now, its lineage share, its reward by version (the store's
    # ``tenant_policies`` view)
    tenant_policies: list[dict] | str = "sink down"
    services: dict[str, dict] = field(default_factory=dict)  # every service: state, detail, restarts
    policy: PolicyView | None = None  # serving version per policy server, and the learner's

    @property
    def healthy(self) -> bool:
        """False when the broker is unreachable or a service is down (``sluice status`` exits 1)."""
        return self.broker_ok and all(s.get("state") != "down" for s in self.services.values())


def broker_reachable(bootstrap_servers: str, timeout_s: float = 1.0) -> bool:
    """Whether any bootstrap server accepts a TCP connection (a plain socket: no librdkafka retries)."""
    for server in bootstrap_servers.split(","):
        host, _, port = server.strip().rpartition(":")
        try:
            with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout_s):
                return True
        except (OSError, ValueError):
            continue
    return False


def group_offsets(cfg: SluiceConfig, group: str, topic: str) -> tuple[int, int]:
    """(sum of committed offsets, sum of high watermarks) of ``group`` on ``topic``."""
    consumer = Consumer(
        cfg.broker.consumer_config(
            group, **{"client.id": f"sluice-status-{uuid.uuid4().hex[:6]}", **QUIET_KAFKA}
        )
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


def tenant_figures(cfg: SluiceConfig, sql: str | None = None) -> list[dict] | str:
    """Per tenant: landed trajectories, how many rewarded, their steps (or the rows of ``sql``); read from
    the running sink as the operator (``sink.admin_key`` or its key file), else why not."""
    from sinks.admin_key import read_admin_key
    from sinks.clients.http_client import SinkHttpClient, probe_sink
    from sinks.exceptions import SinkError

    settings = cfg.sink_settings()
    try:
        url = probe_sink(settings, timeout_s=1.0)
        if url is None:
            return "sink down"
        key = read_admin_key(settings)
        if key is None:
            return "operator key unreadable"
        client = SinkHttpClient(url, key, timeout_s=5.0)
        try:
            return client.query(sql or TENANT_SQL).read_all().to_pylist()
        finally:
            client.close()
    except SinkError as err:
        return f"unreadable: {err}"


TENANT_SQL = (
    "SELECT tenant, count(*) AS trajectories, count(*) FILTER (WHERE rewarded) AS rewarded, "
    "CAST(coalesce(sum(step_count), 0) AS BIGINT) AS steps FROM trajectories GROUP BY tenant ORDER BY tenant"
)
TENANT_POLICY_SQL = (
    "SELECT tenant, served_version, served_by, lineage_parent, lineage_trajectories, lineage_tenants, "
    "reward_by_version FROM tenant_policies ORDER BY tenant"
)


def trainer_progress(cfg: SluiceConfig) -> Figures | str:
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
    keys = ("step", "policy_version", "reward_mean", "samples_per_s")
    return {k: figure(row[k]) if isinstance(row[k], float) else row[k] for k in keys if k in row}


def collect(cfg: SluiceConfig, interval_s: float = 2.0) -> Status:
    status = Status(broker=cfg.broker.bootstrap_servers)
    sink_url = f"http://127.0.0.1:{cfg.sink.query_port}/metrics"
    sink_before = scrape(sink_url)
    t0 = time.monotonic()
    broker_ok = broker_reachable(cfg.broker.bootstrap_servers)
    if not broker_ok:
        status.broker = f"{cfg.broker.bootstrap_servers} (unreachable: connection refused or timed out)"
    try:
        if not broker_ok:
            raise _SkipBroker
        first = {pair: group_offsets(cfg, *pair) for pair in consumer_groups(cfg)}
        if interval_s > 0:
            time.sleep(interval_s)
        for (group, topic), (done0, _) in first.items():
            done, end = group_offsets(cfg, group, topic)
            rate = (done - done0) / interval_s if interval_s > 0 else None
            status.groups.append(GroupLag(group, topic, done, end, rate))
        for logical, name in cfg.topics.all().items():
            status.topics[logical] = group_offsets(cfg, f"sluice-status-{uuid.uuid4().hex[:6]}", name)[1]
    except _SkipBroker:
        pass
    except KafkaException as err:
        broker_ok = False
        status.broker = f"{cfg.broker.bootstrap_servers} (unreachable: {err})"
    status.broker_ok = broker_ok
    status.proxy = scrape(f"http://{cfg.proxy.host}:{cfg.proxy.port}/metrics")
    status.sink = scrape(sink_url)
    status.stages = stage_counters(cfg)
    status.trainer = trainer_progress(cfg)
    status.tenants = tenant_figures(cfg) if isinstance(status.sink, dict) else "sink down"
    if isinstance(status.sink, dict):
        status.tenant_policies = tenant_figures(cfg, TENANT_POLICY_SQL)
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


class _SkipBroker(Exception):
    """The broker did not accept a connection: no Kafka client is made."""


def stage_backlog(cfg: SluiceConfig, groups: list[GroupLag]) -> Backlog | None:
    """The stage group's backlog over its input topics (None when the broker could not be read)."""
    from pipeline.stages.names import app_id

    mine = [g for g in groups if g.group == app_id(cfg.topics, cfg.stages)]
    if not mine:
        return None
    rates = [g.rate_per_s for g in mine]
    rate = None if any(r is None for r in rates) else sum(r for r in rates if r is not None)
    return Backlog(sum(g.lag for g in mine), rate)


def stage_counters(cfg: SluiceConfig) -> Figures | str:
    """The stage workers' counters: from ``stages.web_port`` when set, else summed over the heartbeat
    files of the live workers on this machine."""
    if cfg.stages.web_port:
        return scrape(f"http://127.0.0.1:{cfg.stages.web_port}/metrics")
    beats = [b for b in read_heartbeats(stage_app_dir(cfg)) if pid_alive(b.pid)]
    if not beats:
        return "no worker on this machine"
    counts: Figures = {"workers": len(beats), "pending_joins": sum(int(b.pending_joins) for b in beats)}
    for b in beats:
        for k, v in b.counts.items():
            counts[k] = figure(counts.get(k, 0) + v)
    return counts


def _rate(before: Figures | str, after: Figures | str, key: str, s: float) -> float | None:
    if not isinstance(before, dict) or not isinstance(after, dict) or s <= 0:
        return None
    return max(0.0, after.get(key, 0.0) - before.get(key, 0.0)) / s


def status_data(status: Status) -> dict:
    """``status`` as plain JSON-able data (with each group's lag and the overall verdict)."""
    data = asdict(status)
    for g, row in zip(status.groups, data["groups"], strict=True):
        row["lag"] = g.lag
    data["healthy"] = status.healthy
    return data


@click.command("status")
@config_option
@click.option("--interval", default=2.0, show_default=True, help="Seconds between the two offset samples.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def status_command(config_path: Path | None, interval: float, as_json: bool) -> None:
    """Show each service's state, then lag and counts.

    Services first (exit 1 when the broker is unreachable or a service is down), then per topic the
    records and each consumer group's lag and throughput, per tenant the landed trajectories, the
    proxy's, stage workers' and sink's counters, the trainer's step and each policy server's version, and
    per tenant the policy version it is served, that version's lineage and its reward by version."""
    cfg = load_or_exit(config_path)
    status = collect(cfg, interval)
    click.echo(json.dumps(status_data(status), indent=2) if as_json else render(status))
    if not status.healthy:
        raise SystemExit(1)
