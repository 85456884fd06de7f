"""Carry the stages' tables into a new embedded broker, so a restart keeps what is pending.

The embedded broker keeps its topics in memory: each start of ``sluice up`` begins with an empty broker,
changelogs included. What is pending lives in the stage tables — join state of trajectories still
waiting for steps or for a reward that may come days later, their redacted steps, placeholder numbering,
erasure criteria — and each worker also keeps those tables on local disk (RocksDB, one file per table
partition under its slot's data dir). Before the workers start, ``carry_tables`` writes the newest copy
of every table partition into the new broker's changelog of that table and partition, then removes the
local files: the workers then recover their tables from the changelogs as after any rebalance, whatever
partitions the group gives each of them this time.

Newest copy: a partition a worker gave up in a rebalance stays on its disk, older than the copy of the
worker that took it over. Each file records the last changelog offset it applied (Faust's offset key);
offsets only grow within one broker's life, and every carry removes the files, so the highest offset is
the newest copy.

A join state whose last emitted version never reached the store (lost with the old broker's audited
topic) is carried rewritten to emit that version again (``reemit.py``).

Only redacted text and keyed digests are in these tables, as in the changelogs they came from.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Producer

from pipeline.stages.exceptions import StagesError
from pipeline.stages.internal_topics import ensure_stage_topics
from pipeline.stages.names import TABLES, app_id
from pipeline.stages.reemit import reopened_states
from pipeline.stages.settings import StagesSettings

log = logging.getLogger(__name__)

OFFSET_KEY = b"__faust\x00offset__"  # where Faust's RocksDB store keeps the last changelog offset applied


@dataclass(frozen=True)
class TableCopy:
    table: str
    partition: int
    path: Path
    offset: int  # last changelog offset applied; -1 when unknown


def _open_read_only(path: Path):  # rocksdict.Rdict
    import rocksdict

    return rocksdict.Rdict(
        str(path), options=rocksdict.Options(raw_mode=True), access_type=rocksdict.AccessType.read_only()
    )


def _copy_of(path: Path, table: str) -> TableCopy | None:
    suffix = path.name[len(table) + 1 : -len(".db")]
    if not suffix.isdigit():
        return None
    db = _open_read_only(path)
    try:
        raw = db.get(OFFSET_KEY)
    finally:
        db.close()
    return TableCopy(table, int(suffix), path, int(raw) if raw is not None else -1)


def newest_copies(cfg: StagesSettings) -> dict[tuple[str, int], TableCopy]:
    """Per (table, partition), the copy with the highest applied offset among every worker slot's files."""
    root = cfg.path(cfg.stages.data_dir) / app_id(cfg.topics, cfg.stages)
    best: dict[tuple[str, int], TableCopy] = {}
    for table in TABLES:
        for path in sorted(root.glob(f"worker-*/v*/tables/{table}-*.db")):
            copy = _copy_of(path, table)
            if copy is None:
                continue
            key = (table, copy.partition)
            if key not in best or copy.offset > best[key].offset:
                best[key] = copy
    return best


def _records(copies: list[TableCopy]) -> Iterator[tuple[bytes, bytes]]:
    for copy in copies:
        db = _open_read_only(copy.path)
        try:
            yield from ((k, v) for k, v in db.items() if k != OFFSET_KEY)
        finally:
            db.close()


@dataclass(frozen=True)
class Carried:
    records: dict[str, int]  # per table
    reemit: int  # join states rewritten to emit a version the store never got


def carry_tables(cfg: StagesSettings, timeout_s: float = 60.0) -> Carried:
    """Write every table's newest local copy into the (new, empty) broker's changelogs, then remove the
    local files. Call before any stage worker starts."""
    data_dir = cfg.path(cfg.stages.data_dir)
    copies = newest_copies(cfg) if data_dir.exists() else {}
    carried = dict.fromkeys(TABLES, 0)
    reopened: dict[bytes, bytes] = {}
    if copies:
        ensure_stage_topics(cfg, timeout_s)
        failures: list[str] = []

        def delivered(err, _msg) -> None:  # noqa: ANN001 - confluent's callback signature
            if err is not None:
                failures.append(str(err))

        reopened = reopened_states(cfg, _records([c for (t, _), c in copies.items() if t == "join_state"]))
        producer = Producer(cfg.broker.producer_config(**{"client.id": "sluice-table-carry"}))
        for (table, partition), copy in sorted(copies.items()):
            if partition >= cfg.topics.partitions:
                raise StagesError(
                    f"{copy.path} is partition {partition} of {table}, but topics.partitions is "
                    f"{cfg.topics.partitions}: start with the partition count the tables were made with"
                )
            topic = f"{app_id(cfg.topics, cfg.stages)}-{table}-changelog"
            db = _open_read_only(copy.path)
            before = carried[table]
            try:
                for key, value in db.items():
                    if key == OFFSET_KEY:
                        continue
                    if table == "join_state":
                        value = reopened.get(key, value)
                    while True:
                        try:
                            producer.produce(
                                topic, value=value, key=key, partition=partition, on_delivery=delivered
                            )
                            break
                        except BufferError:
                            producer.poll(0.1)
                    carried[table] += 1
                    producer.poll(0)
            finally:
                db.close()
            log.info(
                "carrying %s partition %d from %s (applied offset %d): %d records",
                table, partition, copy.path.parent.parent.parent.name, copy.offset, carried[table] - before,
            )  # fmt: skip
        left = producer.flush(timeout_s)
        if left or failures:
            raise StagesError(
                f"carrying the stage tables into the broker failed ({left} records unsent, errors: "
                f"{failures[:3]}); the local tables are kept: {data_dir}"
            )
        log.info(
            "carried the stage tables into the new broker: %s",
            ", ".join(f"{n} {t} records" for t, n in carried.items()),
        )
    if data_dir.exists():
        # no copy is kept: an erasure reaches the carried records through the stages, not a stale file
        shutil.rmtree(data_dir)
    return Carried(carried, len(reopened))
