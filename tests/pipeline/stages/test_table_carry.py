"""Carrying stage tables into a new broker: the newest copy of each table partition, byte for byte, into the
changelog partition it belongs to, and no local copy left behind (real RocksDB files, real broker)."""

from __future__ import annotations

from pathlib import Path

import rocksdict
from confluent_kafka import Consumer, TopicPartition

from app.config import SluiceConfig
from pipeline.stages.names import app_id
from pipeline.stages.table_carry import OFFSET_KEY, carry_tables, newest_copies


def _table_file(
    cfg: SluiceConfig, slot: int, table: str, partition: int, rows: dict[bytes, bytes], offset: int
) -> Path:
    path = (
        cfg.path(cfg.stages.data_dir)
        / app_id(cfg.topics, cfg.stages)
        / f"worker-{slot}"
        / "v1"
        / "tables"
        / f"{table}-{partition}.db"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    db = rocksdict.Rdict(str(path), options=rocksdict.Options(raw_mode=True))
    for k, v in rows.items():
        db[k] = v
    db[OFFSET_KEY] = str(offset).encode()
    db.close()
    return path


def _changelog(cfg: SluiceConfig, table: str, partition: int) -> dict[bytes, bytes]:
    consumer = Consumer(cfg.broker.consumer_config("carry-check", **{"enable.partition.eof": True}))
    topic = f"{app_id(cfg.topics, cfg.stages)}-{table}-changelog"
    consumer.assign([TopicPartition(topic, partition, 0)])
    out: dict[bytes, bytes] = {}
    try:
        while True:
            msg = consumer.poll(10)
            assert msg is not None, f"nothing more from {topic}[{partition}]"
            if msg.error() is not None:
                break  # end of the partition
            out[msg.key()] = msg.value()
    finally:
        consumer.close()
    return out


def test_newest_copy_of_each_partition_is_carried_and_the_files_removed(config: SluiceConfig) -> None:
    cfg = config
    # partition 1 of join_state moved from slot 0 (older, offset 4) to slot 1 (newer, offset 9)
    _table_file(cfg, 0, "join_state", 1, {b"acme~t1": b"old"}, offset=4)
    _table_file(cfg, 1, "join_state", 1, {b"acme~t1": b"new", b"acme~t3": b"pending"}, offset=9)
    _table_file(cfg, 0, "join_state", 0, {b"acme~t2": b"p0"}, offset=2)
    _table_file(cfg, 0, "join_steps", 0, {b"acme~t2\x1fe1": b"\x00step"}, offset=0)
    best = newest_copies(cfg.stages_settings())
    assert best[("join_state", 1)].offset == 9 and "worker-1" in str(best[("join_state", 1)].path)

    carried = carry_tables(cfg.stages_settings())
    assert carried.records == {"placeholders": 0, "join_state": 3, "join_steps": 1, "erasure_rules": 0}
    assert carried.reemit == 0
    assert _changelog(cfg, "join_state", 1) == {b"acme~t1": b"new", b"acme~t3": b"pending"}
    assert _changelog(cfg, "join_state", 0) == {b"acme~t2": b"p0"}
    assert _changelog(cfg, "join_steps", 0) == {b"acme~t2\x1fe1": b"\x00step"}
    assert not cfg.path(cfg.stages.data_dir).exists()  # no stale copy for an erasure to miss


def test_nothing_to_carry_is_a_no_op(config: SluiceConfig) -> None:
    assert carry_tables(config.stages_settings()).records == dict.fromkeys(
        ("placeholders", "join_state", "join_steps", "erasure_rules"), 0
    )


def test_a_version_the_store_never_got_is_carried_to_be_emitted_again(config: SluiceConfig) -> None:
    """Join states that say "emitted version 2" are checked against the DuckDB store: where the store
    holds version 2 the state is carried byte for byte; where it holds only version 1 (version 2 was lost
    with the old broker's audited topic) the state is carried to emit version 2 again at once."""
    from governance.reward_join import next_due_at, plan_emission
    from governance.reward_join.state import JoinState
    from pipeline.stages.storage import decode_state, encode_state, peek_due
    from sinks.store import DuckDBStore

    cfg = config

    def emitted(tid: str) -> bytes:
        state = JoinState.new(tid, "acme", 10.0).model_copy(
            update={"emitted_version": 2, "emitted_at": 20.0, "end_seen_at": 15.0, "dirty": False}
        )
        return encode_state(state, 0, next_due_at(state, cfg.rewards))

    stored, lost = emitted("acme~stored"), emitted("acme~lost")
    _table_file(cfg, 0, "join_state", 0, {b"acme~stored": stored, b"acme~lost": lost}, offset=3)
    store = DuckDBStore(cfg.path(cfg.sink.database))
    for tid, version in [("acme~stored", 1), ("acme~stored", 2), ("acme~lost", 1)]:
        store.con.execute(
            "INSERT INTO store.trajectory_versions (event_id, trajectory_id, version, tenant) VALUES (?, ?, ?, ?)",
            [f"{tid}#{version}", tid, version, "acme"],
        )
    store.con.close()

    carried = carry_tables(cfg.stages_settings())
    assert carried.reemit == 1
    changelog = _changelog(cfg, "join_state", 0)
    assert changelog[b"acme~stored"] == stored
    again = decode_state(changelog[b"acme~lost"])
    assert (again.emitted_version, again.dirty) == (1, True)
    assert peek_due(changelog[b"acme~lost"]) == (0, again.end_seen_at)  # due at once
    plan = plan_emission(again, cfg.rewards, 1e9)
    assert plan is not None and plan.version == 2
