"""Erasure on the real stack: a subject's traffic, landed and in flight, is erased; late rewards, a
re-delivered record and the subject's other copies never bring it back; another subject's late rewards
still land. Then nothing of the subject is on any topic after the erasure (tombstones and the erasure log
aside), nor in DuckDB, the stages' RocksDB files, the proxy's spool and linking files, the logs or the
export written before."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest
import yaml
from confluent_kafka import Consumer, Producer, TopicPartition

from app.config import SluiceConfig, load_config
from app.up import running_stack
from pipeline.demo.summary import id_list, rows, wait_until
from pipeline.stages.names import changelog_topics
from pipeline.topic_ends import watermarks
from sinks.clients import connect_client
from tests.system.conftest import stack_config

REPO = Path(__file__).resolve().parents[2]
ACME, GLOBEX = "sk-sluice-acme", "sk-sluice-globex"
RUN = uuid.uuid4().hex[:6]
SUBJECT = f"subject-erase-{RUN}"  # the data subject who asks to be forgotten
OTHER = f"subject-keep-{RUN}"
MARK = f"ZEBRA{RUN}QUARTZ"  # in every message of the erased subject
KEEP = f"OKAPI{RUN}MAPLE"


def _records(cfg: SluiceConfig, topic: str) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """Every record of ``topic`` now: (partition, offset, key, value)."""
    consumer = Consumer(cfg.broker.consumer_config(f"test-{uuid.uuid4().hex[:8]}"))
    try:
        meta = consumer.list_topics(topic, timeout=10).topics[topic]
        ends = {
            p: marks
            for (_, p), marks in watermarks(cfg.broker, [(topic, p) for p in meta.partitions]).items()
        }
        consumer.assign([TopicPartition(topic, p, lo) for p, (lo, _) in ends.items()])
        out, left = [], {p for p, (lo, hi) in ends.items() if hi > lo}
        while left:
            msg = consumer.poll(5.0)
            assert msg is not None, f"{topic}: records missing below the high watermark"
            if msg.error():
                continue
            out.append((msg.partition(), msg.offset(), msg.key(), msg.value()))
            if msg.offset() + 1 >= ends[msg.partition()][1]:
                left.discard(msg.partition())
        return out
    finally:
        consumer.close()


def _ends(cfg: SluiceConfig, topics: list[str]) -> dict[str, dict[int, int]]:
    return {t: {p: o + 1 for p, o, _, _ in _records(cfg, t)} for t in topics}


def _chat(http: httpx.Client, key: str, tid: str, subject: str, text: str) -> httpx.Response:
    return http.post(
        "/v1/chat/completions",
        json={"model": "sluice-tiny", "max_tokens": 6, "messages": [{"role": "user", "content": text}]},
        headers={
            "authorization": f"Bearer {key}",
            "x-sluice-trajectory-id": tid,
            "x-sluice-subject-id": subject,
        },
    )


def _cli(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args, "--config", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _leaks(blob: bytes, needles: list[str]) -> list[str]:
    return [n for n in needles if n.encode() in blob]


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("erasure")
    path = stack_config(tmp)
    data = yaml.safe_load(path.read_text())
    data["stages"]["workers"] = 1
    data["rewards"]["idle_end_s"] = 3600  # trajectories without an end stay in flight in the join
    path.write_text(yaml.safe_dump(data))
    return tmp, path


def test_erasure_reaches_every_copy_and_nothing_comes_back(config: tuple[Path, Path]) -> None:
    tmp, path = config
    cfg = load_config(path)
    log = io.StringIO()
    erased = [f"acme~landed-1-{RUN}", f"acme~landed-2-{RUN}", f"acme~flight-{RUN}"]
    kept = [f"globex~kept-1-{RUN}", f"globex~kept-2-{RUN}"]
    needles = [MARK, SUBJECT]
    with running_stack(cfg, path, log_path=tmp / "logs" / "up.log", sink=log):
        client = connect_client(
            cfg.sink_settings(), None
        )  # the operator, through the admin key file made at first start
        root = f"http://{cfg.proxy.host}:{cfg.proxy.port}"
        with httpx.Client(base_url=root, timeout=120) as http:
            for tid in erased:
                for turn in range(2):
                    assert _chat(http, ACME, tid, SUBJECT, f"{MARK} turn {turn} of {tid}").status_code == 200
            for tid in kept:
                assert _chat(http, GLOBEX, tid, OTHER, f"{KEEP} for {tid}").status_code == 200
            for tid in (erased[0], erased[1], kept[0]):  # these land; the others stay in flight
                assert (
                    http.post(
                        f"/v1/trajectories/{tid}/end",
                        json={},
                        headers={"authorization": "Bearer " + (ACME if tid.startswith("acme") else GLOBEX)},
                    ).status_code
                    == 202
                )
            assert http.post(f"/v1/trajectories/{erased[0]}/rewards", json={"value": 1}, headers={"authorization": f"Bearer {ACME}"}).status_code == 202  # fmt: skip
            landed_ids = [erased[0], erased[1], kept[0]]
            wait_until(
                lambda: (
                    len(
                        rows(
                            client,
                            f"SELECT trajectory_id FROM trajectories WHERE trajectory_id IN ({id_list(landed_ids)})",
                        )
                    )
                    == 3
                ),  # fmt: skip
                180,
                "three trajectories landed",
            )
            export = tmp / "exports" / "all.jsonl"
            done = _cli(path, "export", "--query", "SELECT * FROM trajectories", "--out", str(export))
            assert done.returncode == 0, done.stderr
            assert MARK.encode() in export.read_bytes()

            topics = [*cfg.topics.all().values(), *changelog_topics(cfg.topics, cfg.stages)]
            before = _ends(cfg, topics)
            raw_copy = next(
                (p, v)
                for p, _, k, v in _records(cfg, cfg.topics.name("steps_raw"))
                if k == erased[0].encode()
            )

            erase = _cli(path, "erase", "--subject", SUBJECT, "--reason", "art. 17 request")
            assert erase.returncode == 0, erase.stderr
            out = erase.stdout
            erasure_id = re.search(r"erasure (\w+) completed: 2 trajectories", out)
            assert erasure_id, out  # the two landed ones are in the store; the third is in flight
            for place in ("duckdb:", "topics:", "stages:", "proxy:", "exports:", "weights:", "to do:"):
                assert place in out, out
            assert str(export) in out and SUBJECT not in out

            # wait until every holder applied it: the stage worker (both partitions) and the proxy
            eid = erasure_id.group(1)
            wait_until(
                lambda: (
                    all(
                        f"erasure {eid}: " in log.getvalue() and f"partition {p}" in log.getvalue()
                        for p in (0, 1)
                    )
                    and "linked trajectories forgotten" in log.getvalue()
                ),
                60,
                "the stages and the proxy to apply the erasure",
            )

            # late rewards, a step and an end for the erased trajectories: refused, nothing published
            for tid in erased:
                late = http.post(f"/v1/trajectories/{tid}/rewards", json={"value": 0.9}, headers={"authorization": f"Bearer {ACME}"})  # fmt: skip
                assert late.status_code == 410, late.text
            assert _chat(http, ACME, erased[2], SUBJECT, f"{MARK} after").status_code == 410
            # a re-delivered raw record of an erased trajectory (at-least-once upstream): dropped
            producer = Producer(cfg.broker.producer_config())
            producer.produce(
                cfg.topics.name("steps_raw"), key=erased[0].encode(), value=raw_copy[1], partition=raw_copy[0]
            )
            assert producer.flush(10) == 0
            redelivered = _ends(cfg, [cfg.topics.name("steps_raw")])[cfg.topics.name("steps_raw")]
            # the other subject's late reward makes a new version; its in-flight trajectory lands
            globex = {"authorization": f"Bearer {GLOBEX}"}
            assert (
                http.post(
                    f"/v1/trajectories/{kept[0]}/rewards", json={"value": 0.5}, headers=globex
                ).status_code
                == 202
            )
            assert http.post(f"/v1/trajectories/{kept[1]}/end", json={}, headers=globex).status_code == 202
            wait_until(
                lambda: (
                    {
                        r["trajectory_id"]: r["version"]
                        for r in rows(
                            client,
                            f"SELECT trajectory_id, version FROM trajectories WHERE trajectory_id IN ({id_list(kept)})",
                        )
                    }  # fmt: skip
                    == {kept[0]: 2, kept[1]: 1}
                ),
                120,
                "the other subject's late reward and in-flight trajectory to land",
            )
            wait_until(
                lambda: "erased_dropped" in log.getvalue(), 60, "the re-delivered record to be dropped"
            )

            # nothing of the subject in DuckDB
            for view in (
                "trajectories",
                "trajectory_versions",
                "steps",
                "rewards",
                "dead_letters",
                "erasures",
            ):
                dump = repr(rows(client, f"SELECT * FROM {view}")).encode()
                assert _leaks(dump, [*needles, *erased]) == [], view
            assert KEEP.encode() in repr(rows(client, "SELECT * FROM steps")).encode()
            client.close()

        # nothing of the subject on any topic after the erasure: only tombstones (key = id, no value)
        # and erasure markers without content; the re-delivered record we injected aside
        injected = (raw_copy[0], redelivered[raw_copy[0]] - 1)
        for topic in topics:
            if topic == cfg.topics.name("erasure"):
                continue  # the erasure log
            for p, o, _key, value in _records(cfg, topic):
                if o < before[topic].get(p, 0) or value is None or (topic == cfg.topics.name("steps_raw") and (p, o) == injected):  # fmt: skip
                    continue
                assert _leaks(value, needles) == [], (topic, p, o)
                if topic.endswith("join_state-changelog") and any(t.encode() in value for t in erased):
                    assert b'"erased_until"' in value and b"facts" not in value, value  # the marker only
                else:
                    assert _leaks(value, erased) == [], (topic, p, o, value[:300])
        tail = {t: [r for r in _records(cfg, t) if r[2] == erased[0].encode()][-1] for t in (cfg.topics.name("trajectories_audited"), cfg.topics.name("trajectories_train"))}  # fmt: skip
        assert all(r[3] is None for r in tail.values()), "the compacted topics end on a tombstone"
        # every key written for an erased trajectory (its step records' too) ends on a tombstone
        for topic in (cfg.topics.name("trajectories_audited"), cfg.topics.name("trajectories_train")):
            last: dict[bytes, bytes | None] = {}
            for _, _, key, value in _records(cfg, topic):
                if key is not None and key.split(b"#")[0] in {t.encode() for t in erased}:
                    last[key] = value
            assert last and all(v is None for v in last.values()), (topic, [k for k, v in last.items() if v])

    # after the stack stopped: the stages' RocksDB files, the spool and linking files, logs, the export
    import rocksdict

    dbs = [d for d in cfg.path(cfg.stages.data_dir).rglob("*.db") if d.is_dir()]
    assert dbs, "the stages kept their tables in RocksDB"
    for db_dir in dbs:
        for f in db_dir.rglob("*"):
            if f.is_file():
                assert _leaks(f.read_bytes(), needles) == [], f
        db = rocksdict.Rdict(str(db_dir), access_type=rocksdict.AccessType.read_only(), options=rocksdict.Options(raw_mode=True))  # fmt: skip
        try:
            for k, v in db.items():
                assert _leaks(bytes(k) + bytes(v or b""), needles) == [], db_dir
        finally:
            db.close()
    spool = cfg.path(cfg.proxy.spool_dir)
    for f in spool.rglob("*"):
        if f.is_file():
            assert _leaks(f.read_bytes(), [*needles, *erased]) == [], f
    assert (spool / "links.json").exists()
    for f in (tmp / "logs").rglob("*"):
        assert _leaks(f.read_bytes(), needles) == [], f
    assert _leaks(log.getvalue().encode(), needles) == []
    exported = export.read_bytes()
    assert _leaks(exported, [*needles, *erased]) == [] and KEEP.encode() in exported
