"""The sink end to end: real broker, real `sluice sink` subprocess, real DuckDB file, the real CLI."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from infra.broker import LocalBroker
from sinks.admin_key import ensure_admin_key
from sinks.base import StoreClient
from sinks.clients import SinkHttpClient, connect_client
from sinks.erasure_models import ErasureEvent
from sinks.faults import CRASH_ENV, CRASH_EXIT_CODE
from sinks.settings import SinkSettings
from sluice.events import DeadLetter, StepEvent, encode
from testing.samples import make_trajectory
from tests.kafka_helpers import read_topic
from tests.sinks.helpers import (
    ACME_KEY,
    GLOBEX_KEY,
    REPO,
    SinkProcess,
    produce,
    produce_trajectories,
    write_config,
)

pytestmark = pytest.mark.slow


def cli(config: Path, *args: str, api_key: str | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "app.cli", args[0], "--config", str(config), *args[1:]]
    if api_key:
        cmd += ["--api-key", api_key]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)


def cli_json(config: Path, sql: str, api_key: str | None = None) -> list[dict[str, Any]]:
    done = cli(config, "query", "--format", "json", sql, api_key=api_key)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def wait_for(check: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def scalar(client: StoreClient, sql: str) -> Any:
    return client.query(sql).read_all().column(0)[0].as_py()


def test_crash_at_any_point_leaves_no_gap_and_no_duplicate(broker: LocalBroker, tmp_path: Path) -> None:
    """Kill the sink (os._exit) at each point of a write; restart; exactly N trajectories remain."""
    path, cfg = write_config(broker, tmp_path, batch_max_rows=40)
    produced: list[str] = []

    def produce_round(n: int) -> None:
        trajs = [make_trajectory(f"r{len(produced) + i}", n_steps=3, reward=1.0) for i in range(n)]
        produced.extend(t.trajectory_id for t in trajs)
        produce_trajectories(cfg, [*trajs, trajs[0]])  # plus an upstream re-delivery

    produce_round(12)
    for point in ("after_poll", "after_write", "before_commit", "after_commit"):
        produce_round(12)
        crashing = SinkProcess(path, cfg, env={CRASH_ENV: f"{point}:2"})
        assert crashing.wait_exit(90) == CRASH_EXIT_CODE, crashing.output()
        assert f"crashing at {point}" in crashing.output()

    sink = SinkProcess(path, cfg).wait_ready()
    try:
        client = SinkHttpClient(sink.url, ensure_admin_key(cfg))
        n = len(produced)
        # every record consumed, re-deliveries included: the offsets stored with the rows reach the end
        offsets = "SELECT sum(next_offset) FROM sink_offsets WHERE topic LIKE '%audited'"
        wait_for(lambda: scalar(client, offsets) == n + 5, f"offsets past all {n + 5} records")
        assert scalar(client, "SELECT count(*) FROM trajectories") == n
        assert scalar(client, "SELECT count(*) FROM trajectory_versions") == n
        assert scalar(client, "SELECT count(DISTINCT trajectory_id) FROM trajectories") == n
        assert scalar(client, "SELECT count(*) FROM steps") == 3 * n
        assert scalar(client, "SELECT count(*) FROM rewards") == n
        assert scalar(client, "SELECT count(*) FROM lineage") == n
        ids = {
            r["trajectory_id"]
            for r in client.query("SELECT trajectory_id FROM trajectories").read_all().to_pylist()
        }
        assert ids == set(produced)
    finally:
        assert sink.stop() == 0, sink.output()


def _bad_records(cfg: SinkSettings) -> None:
    raw = make_trajectory("raw1", tenant="acme")
    raw.governance.redaction = "raw"
    raw.steps[0].governance.redaction = "raw"
    step = StepEvent(trajectory_id="s1", tenant="acme", step_index=0)
    produce(
        cfg,
        "trajectories_audited",
        [("junk", b"{oops"), ("s1", encode(step)), ("raw1", encode(raw))],
    )
    secret = base64.b64encode(b'{"content": "SSN 078-05-1120"}').decode()
    dl = DeadLetter(
        stage="redact",
        reason="analyzer failed",
        source_topic=cfg.topics.name("steps_raw"),
        original_b64=secret,
    )
    produce(cfg, "deadletter", [(None, encode(dl))])


def test_live_sink_query_scoping_rewards_export_erasure(broker: LocalBroker, tmp_path: Path) -> None:
    path, cfg = write_config(broker, tmp_path, assignment="manual")
    sink = SinkProcess(path, cfg).wait_ready()
    client = SinkHttpClient(sink.url, ensure_admin_key(cfg))
    try:
        acme = [
            make_trajectory(f"a{i}", tenant="acme", n_steps=3, subject_ids=["user-7"] if i < 2 else [])
            for i in range(6)
        ]
        globex = [make_trajectory(f"g{i}", tenant="globex", n_steps=2, reward=1.0) for i in range(4)]
        produce_trajectories(cfg, acme + globex)
        _bad_records(cfg)

        # query while the sink runs, through the CLI (the sink holds the only write lock)
        wait_for(
            lambda: cli_json(path, "SELECT count(*) AS n FROM trajectories")[0]["n"] == 10, "10 trajectories"
        )
        assert cli_json(path, "SELECT tenant, count(*) AS n FROM trajectories GROUP BY ALL", ACME_KEY) == [
            {"tenant": "acme", "n": 6}
        ]
        refused = cli(path, "query", "SELECT * FROM store.steps", api_key=GLOBEX_KEY)
        assert refused.returncode == 1 and "qualified names" in refused.stderr
        bad_sql = cli(path, "query", "SELEC count(*) FROM steps")
        assert bad_sql.returncode == 1 and "syntax error" in bad_sql.stderr
        assert "Traceback" not in bad_sql.stderr
        assert cli(path, "query", "SELECT 1", api_key="sk-nobody").returncode == 1

        # invalid records land in dead letters, with reasons; raw bytes never stored
        wait_for(lambda: scalar(client, "SELECT count(*) FROM dead_letters") == 4, "4 dead letters")
        dls = client.query("SELECT * FROM dead_letters ORDER BY error_type").read_all().to_pylist()
        assert {d["error_type"] for d in dls} == {"ValidationError", "WrongEventType", "Unredacted", ""}
        assert all(d["reason"] for d in dls)
        withheld = [d for d in dls if d["original_withheld"]]
        assert len(withheld) == 2 and all(d["original_b64"] is None for d in withheld)
        assert scalar(client, "SELECT count(*) FROM lineage WHERE kind IN ('invalid', 'dead_letter')") == 4

        # late rewards: new versions update the latest view and the training set
        assert scalar(client, "SELECT count(*) FROM training_set WHERE tenant = 'acme'") == 0
        produce_trajectories(
            cfg, [make_trajectory(f"a{i}", tenant="acme", n_steps=3, version=2, reward=0.5) for i in (1, 3)]
        )
        wait_for(
            lambda: scalar(client, "SELECT count(*) FROM training_set WHERE tenant='acme'") == 2, "rewards"
        )
        assert scalar(client, "SELECT version FROM trajectories WHERE trajectory_id = 'a1'") == 2
        assert scalar(client, "SELECT count(*) FROM trajectories") == 10

        # export the training set for trainers: Parquet and JSONL, with manifests
        out = tmp_path / "exports" / "train.parquet"
        done = cli(path, "export", "--format", "parquet", "--out", str(out))
        assert done.returncode == 0, done.stderr
        table = pq.read_table(out)
        assert table.num_rows == 6  # acme a1, a3 + globex g0..g3
        for col in ("prompt", "completion", "messages", "reward", "rewards", "group_id", "completion_mask"):
            assert col in table.column_names
        manifest = json.loads((tmp_path / "exports" / "train.parquet.manifest.json").read_text())
        assert manifest["rows"] == 6 and manifest["policy_versions"] == ["p1"]
        assert manifest["query"] == "SELECT * FROM training_set"
        jsonl = tmp_path / "exports" / "globex.jsonl"
        done = cli(
            path, "export", "--query", "SELECT * FROM trajectories", "--out", str(jsonl), api_key=GLOBEX_KEY
        )
        assert done.returncode == 0, done.stderr
        lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
        assert len(lines) == 4 and {r["tenant"] for r in lines} == {"globex"}
        assert lines[0]["messages"][0]["role"] == "system" and lines[0]["completion"]

        # right to erasure, end to end: every row of the subject goes, the audit entry stays
        done = cli(path, "erase", "--subject", "user-7", "--reason", "ticket 1")
        assert done.returncode == 0, done.stderr
        for view in ("trajectory_versions", "steps", "rewards", "eligibility_decisions", "lineage"):
            left = scalar(client, f"SELECT count(*) FROM {view} WHERE trajectory_id IN ('a0', 'a1')")
            assert left == 0, view
        audit = client.query("SELECT * FROM erasures").read_all().to_pylist()
        assert len(audit) == 1 and audit[0]["status"] == "completed" and audit[0]["trajectories"] == 2
        assert audit[0]["scope"] == "subject" and audit[0]["reason"] == "ticket 1"
        assert audit[0]["tombstones"] == 4 and json.loads(audit[0]["rows_deleted"])["steps"] == 6
        tombstones = read_topic(cfg.broker, cfg.topics.name("trajectories_train"), expect=2, timeout_s=20)
        assert sorted(k for k, v in tombstones if v is None) == [b"a0", b"a1"]
        events = read_topic(cfg.broker, cfg.topics.name("erasure"), expect=4, timeout_s=20)
        parsed = [ErasureEvent.model_validate_json(v) for _, v in events]
        assert {e.trajectory_id for e in parsed} == {"a0", "a1", None}
        assert all(e.target == "user-7" for e in parsed)

        # a late version of an erased trajectory does not come back
        produce_trajectories(cfg, [make_trajectory("a1", tenant="acme", version=3, reward=1.0)])
        produce_trajectories(cfg, [make_trajectory("a9", tenant="acme")])
        wait_for(
            lambda: scalar(client, "SELECT count(*) FROM trajectories WHERE trajectory_id='a9'") == 1, "a9"
        )
        assert scalar(client, "SELECT count(*) FROM trajectory_versions WHERE trajectory_id = 'a1'") == 0

        metrics = sink.metrics()
        assert "sluice_sink_rows_written_total" in metrics and "sluice_sink_lag_total" in metrics
        assert "sluice_sink_dead_letters_total 4.0" in metrics
    finally:
        assert sink.stop() == 0, sink.output()
    assert "sluice sink ready" in sink.output() and ACME_KEY not in sink.output()

    # with the sink stopped, queries open the file read-only
    assert cli_json(path, "SELECT count(*) AS n FROM trajectories") == [{"n": 9}]
    assert cli_json(path, "SELECT count(*) AS n FROM trajectories", GLOBEX_KEY) == [{"n": 4}]


def test_erasure_survives_a_crash_between_delete_and_tombstones(broker: LocalBroker, tmp_path: Path) -> None:
    """The sink dies after deleting, before publishing: re-running the request completes it."""
    path, cfg = write_config(broker, tmp_path, assignment="manual")
    produce_trajectories(
        cfg, [make_trajectory(f"e{i}", tenant="initech", subject_ids=["u-1"]) for i in range(3)]
    )
    sink = SinkProcess(path, cfg, env={CRASH_ENV: "after_erase_db"}).wait_ready()
    client = SinkHttpClient(sink.url, ensure_admin_key(cfg))
    wait_for(lambda: scalar(client, "SELECT count(*) FROM trajectories") == 3, "3 trajectories")
    failed = cli(path, "erase", "--subject", "u-1")
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    assert sink.wait_exit(30) == CRASH_EXIT_CODE

    sink = SinkProcess(path, cfg).wait_ready()
    try:
        client = SinkHttpClient(sink.url, ensure_admin_key(cfg))
        assert scalar(client, "SELECT count(*) FROM trajectory_versions") == 0  # the delete was committed
        assert scalar(client, "SELECT status FROM erasures") == "erased_in_store"
        done = cli(path, "erase", "--subject", "u-1")
        assert done.returncode == 0, done.stderr
        assert "3 trajectories" in done.stdout and "6 tombstones" in done.stdout
        got = read_topic(cfg.broker, cfg.topics.name("trajectories_audited"), expect=6, timeout_s=20)
        assert sorted(k for k, v in got if v is None) == [b"e0", b"e1", b"e2"]
    finally:
        assert sink.stop() == 0, sink.output()


def test_client_follows_the_sink_as_it_starts_and_stops(broker: LocalBroker, tmp_path: Path) -> None:
    """A client made while no sink runs reads the file; once a sink starts and holds the file's lock it
    reaches the sink instead, and back to the file when the sink stops (a wait loop across a restart)."""
    path, cfg = write_config(broker, tmp_path)
    produce_trajectories(cfg, [make_trajectory(f"f{i}", n_steps=2) for i in range(3)])
    first = SinkProcess(path, cfg).wait_ready()
    client = SinkHttpClient(first.url, ensure_admin_key(cfg))
    wait_for(lambda: scalar(client, "SELECT count(*) FROM trajectories") == 3, "3 trajectories")
    assert first.stop() == 0, first.output()

    routed = connect_client(cfg, None)
    count = "SELECT count(*) FROM trajectories"
    assert routed.where.startswith("file ")
    assert scalar(routed, count) == 3
    sink = SinkProcess(path, cfg).wait_ready()
    try:
        produce_trajectories(cfg, [make_trajectory("f3", n_steps=2)])
        wait_for(lambda: scalar(routed, count) == 4, "the 4th trajectory, read through the sink")
        assert routed.where.startswith("sink at ")
    finally:
        assert sink.stop() == 0, sink.output()
    assert scalar(routed, count) == 4
    assert routed.where.startswith("file ")
    routed.close()
