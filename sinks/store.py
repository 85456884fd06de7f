"""The DuckDB audited trajectory store: schema, batched upserts with their offsets in one transaction.

Exactly-once results over at-least-once delivery: a batch's rows and the consumer offsets that follow
it are written in the same DuckDB transaction, and rows upsert by identity, so a crash at any point
leaves either both or neither, and a re-delivered record changes nothing. Rows go in through Arrow: each
batch table is registered and inserted with one ``INSERT ... SELECT ... ON CONFLICT`` statement.
Rows of erased trajectories that arrive late are dropped before the inserts (``without_erased``).

The database is opened with ``enable_external_access=false``: queries served from it cannot read or
write files (exports are written by the client through pyarrow).

    sluice sink --config infra/sluice.yaml
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from sinks.arrow_tables import columns, to_arrow
from sinks.batch import KEYS, PendingBatch
from sinks.config import SinkConfig
from sinks.exceptions import SinkError
from sinks.faults import CrashPlan
from sinks.schema import COMPUTED_COLUMNS, TRAJECTORY_TABLES, schema_ddl
from sinks.views import quote_literal

log = logging.getLogger(__name__)

# Tables whose conflicting row is replaced when a newer version changed its content.
_UPDATE_IF_CHANGED = ("steps",)


def stored_columns(table: str) -> dict[str, str]:
    """Every column the insert fills, with the SQL it takes its value from: the batch's own columns, then
    those DuckDB computes (``COMPUTED_COLUMNS``)."""
    return {c: f'i."{c}"' for c in columns(table)} | COMPUTED_COLUMNS.get(table, {})


def _insert_sql(table: str) -> str:
    stored = stored_columns(table)
    names = ", ".join(f'"{c}"' for c in stored)
    return f"INSERT INTO store.{table} ({names}) SELECT {', '.join(stored.values())} FROM _in_{table} i "


def _upsert_sql(table: str) -> str:
    cols = list(stored_columns(table))
    sql = _insert_sql(table)
    if table in _UPDATE_IF_CHANGED:
        keys = KEYS[table]
        sets = ", ".join(f'"{c}" = EXCLUDED."{c}"' for c in cols if c not in keys)
        return (
            sql + f"ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {sets} "
            f"WHERE EXCLUDED.since_version > {table}.since_version "
            f"AND EXCLUDED.content_hash <> {table}.content_hash"
        )
    return sql + "ON CONFLICT DO NOTHING"


UPSERT_SQL = {t: _upsert_sql(t) for t in KEYS}
# Plain inserts: about twice as fast as ON CONFLICT (no conflict handling per row), but a row that exists
# already raises, which aborts the transaction. Tried first for batches that should not conflict.
INSERT_SQL = {t: _insert_sql(t) for t in KEYS}


class _Conflict(Exception):
    """A plain insert met a stored row (its transaction is rolled back)."""


def _expects_no_conflicts(batch: PendingBatch) -> bool:
    """First versions only and no deletes: rows are new unless re-delivered (after a crash, say)."""
    if batch.deletes:
        return False
    return all(r["version"] == 1 for r in batch.tables["trajectory_versions"].values())


# How long a starting sink waits for a reader's lock on its file (a reader holds it for one query).
SINK_LOCK_WAIT_S = 30.0

# The catalog the sink attaches its file as (readers open the file as their default database instead).
STORE_CATALOG = "sluice_store"


def connect(
    path: Path, read_only: bool = False, row_group_size: int | None = None, lock_wait_s: float = 0.0
) -> duckdb.DuckDBPyConnection:
    """Open the store file (file access from SQL disabled).

    ``lock_wait_s``: how long to keep trying while another process holds the file's lock. A reader that
    opened the file while no sink served it (``sluice query`` on the file, a wait loop) holds the lock for
    one query; a sink restarting at that moment waits for it instead of failing its start.

    ``row_group_size`` (the sink): the file is attached as ``STORE_CATALOG`` with row groups of that many
    rows and made the default catalog. A batch's full row groups are then written compressed to the file
    at commit (DuckDB's optimistic write) instead of through the WAL and again at the checkpoint; with
    DuckDB's 122,880-row groups a batch never fills one.
    """
    if read_only and not path.exists():
        raise SinkError(f"no store at {path}: start the sink (sluice sink) to create it")
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline, told = time.monotonic() + lock_wait_s, False
    while True:
        try:
            return _open(path, read_only, row_group_size)
        except SinkError as err:
            if not is_lock_conflict(err) or time.monotonic() >= deadline:
                raise
            if not told:
                log.info("%s is locked by another process; waiting for it (up to %.0fs)", path, lock_wait_s)
                told = True
            time.sleep(0.2)


def is_lock_conflict(err: Exception) -> bool:
    """DuckDB refused the file because another process holds its lock."""
    return "lock" in str(err).lower()


def _open(path: Path, read_only: bool, row_group_size: int | None) -> duckdb.DuckDBPyConnection:
    try:
        if row_group_size is None:
            return duckdb.connect(str(path), read_only=read_only, config={"enable_external_access": False})
        con = duckdb.connect()
        try:
            con.execute(
                f"ATTACH {quote_literal(str(path))} AS {STORE_CATALOG} (ROW_GROUP_SIZE {int(row_group_size)})"
            ).fetchall()
            con.execute(f"USE {STORE_CATALOG}").fetchall()
            con.execute("SET enable_external_access = false").fetchall()  # cannot be turned back on
        except BaseException:
            con.close()
            raise
        return con
    except duckdb.IOException as err:
        raise SinkError(f"cannot open {path}: {err}") from None


class DuckDBStore:
    """The sink's read-write handle on its database (one per process, used from one thread)."""

    def __init__(
        self,
        path: Path,
        crash: CrashPlan | None = None,
        checkpoint_threshold_mb: int = 256,
        memory_limit: str | None = None,
        row_group_size: int | None = None,
        lock_wait_s: float = 0.0,
    ) -> None:
        self.path = path
        self.con = connect(path, row_group_size=row_group_size, lock_wait_s=lock_wait_s)
        self.con.execute(f"SET checkpoint_threshold = '{int(checkpoint_threshold_mb)}MB'").fetchall()
        if memory_limit:
            self.con.execute("SET memory_limit = ?", [memory_limit]).fetchall()
        self.crash = crash or CrashPlan(None)
        try:
            self.ensure_schema()
        except BaseException:
            self.con.close()
            raise

    @classmethod
    def for_sink(
        cls,
        path: Path,
        sink: SinkConfig,
        crash: CrashPlan | None = None,
    ) -> DuckDBStore:
        """The store opened with the sink's settings (what ``sluice sink`` and the benchmarks use)."""
        return cls(
            path,
            crash,
            sink.checkpoint_threshold_mb,
            sink.memory_limit,
            sink.row_group_size,
            SINK_LOCK_WAIT_S,
        )

    def ensure_schema(self) -> None:
        """Create or migrate the schema and (re)create the views, in one transaction."""
        con = self.con
        con.execute("BEGIN TRANSACTION").fetchall()
        try:
            for stmt in schema_ddl(stored_schema_version(con)):
                con.execute(stmt).fetchall()
            con.execute("COMMIT").fetchall()
        except BaseException:
            rollback(con)
            raise

    def adopt_broker(self, cluster_id: str, group_id: str) -> bool:
        """Record which broker the stored offsets of ``group_id`` belong to. When it is another one (a
        restarted embedded broker keeps nothing and has a new cluster id), those offsets point into topics
        that no longer exist: they are dropped, so every partition is read from its beginning. Returns
        whether they were dropped."""
        key = f"broker_cluster_id:{group_id}"
        row = self.con.execute("SELECT value FROM store.meta WHERE key = ?", [key]).fetchone()
        if row is not None and row[0] == cluster_id:
            return False
        con = self.con
        con.execute("BEGIN TRANSACTION").fetchall()
        try:
            dropped = row is not None
            if dropped:
                con.execute("DELETE FROM store.offsets WHERE group_id = ?", [group_id]).fetchall()
            con.execute("INSERT OR REPLACE INTO store.meta VALUES (?, ?)", [key, cluster_id]).fetchall()
            con.execute("COMMIT").fetchall()
        except BaseException:
            rollback(con)
            raise
        return dropped

    def stored_offsets(self, group_id: str) -> dict[tuple[str, int], int]:
        """Next offset to read per (topic, partition), as committed with the rows."""
        rows = self.con.execute(
            "SELECT topic, partition, next_offset FROM store.offsets WHERE group_id = ?", [group_id]
        ).fetchall()
        return {(t, p): o for t, p, o in rows}

    def write(self, batch: PendingBatch, group_id: str) -> dict[str, int]:
        """Write the batch and its offsets atomically. Returns rows written per table.

        Records whose rows do not convert to the store's types become dead letters (the rest is written).
        """
        return self.write_tables(*self.arrow_tables(batch), group_id)

    def arrow_tables(self, batch: PendingBatch) -> tuple[PendingBatch, dict[str, pa.Table]]:
        """The batch's Arrow tables, and the batch they are of: when some records' rows do not convert
        to the store's types, a batch with those records turned into dead letters."""
        try:
            return batch, batch.arrow_tables()
        except (pa.ArrowException, OverflowError, TypeError, ValueError) as err:
            log.warning("batch does not convert (%s): isolating the records that do not fit", err)
            batch = batch.without_unstorable()
            return batch, batch.arrow_tables()

    def write_tables(
        self,
        batch: PendingBatch,
        tables: dict[str, pa.Table],
        group_id: str,
        con: duckdb.DuckDBPyConnection | None = None,
    ) -> dict[str, int]:
        """Write a batch's tables (``arrow_tables``) and offsets atomically, on ``con`` (a ``cursor``
        of this store for another thread; default: the store's connection)."""
        con = con or self.con
        if _expects_no_conflicts(batch):
            try:
                return self._write(con, batch, tables, group_id, INSERT_SQL)
            except _Conflict:
                log.debug("batch re-delivers stored rows: writing it again with upserts")
        return self._write(con, batch, tables, group_id, UPSERT_SQL)

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """Another connection to this store, for use on another thread (DuckDB connections are not
        thread-safe), in the store's catalog (a cursor starts in DuckDB's in-memory one)."""
        catalog = self.con.execute("SELECT current_database()").fetchone()[0]
        cur = self.con.cursor()
        cur.execute(f'USE "{catalog}"').fetchall()
        return cur

    def _write(
        self,
        con: duckdb.DuckDBPyConnection,
        batch: PendingBatch,
        tables: dict[str, pa.Table],
        group_id: str,
        sql: dict[str, str],
    ) -> dict[str, int]:
        """One transaction: deletes, one statement per table (``sql``), offsets, commit."""
        written: dict[str, int] = {}
        con.execute("BEGIN TRANSACTION").fetchall()
        try:
            if batch.deletes:
                deleted = delete_trajectories(con, batch.deletes)
                written["deleted"] = sum(deleted.values())
            tables = without_erased(con, tables)
            for name, table in tables.items():
                con.register(f"_in_{name}", table)
                try:
                    written[name] = con.execute(sql[name]).fetchone()[0]
                except duckdb.ConstraintException as err:
                    if sql is INSERT_SQL:
                        raise _Conflict(str(err)) from err
                    raise
                finally:
                    with contextlib.suppress(duckdb.Error):  # fails in an aborted transaction: see below
                        con.unregister(f"_in_{name}")
            self.crash.reached("after_write")
            _store_offsets(con, group_id, batch.offsets)
            self.crash.reached("before_commit")
            con.execute("COMMIT").fetchall()
        except BaseException:
            rollback(con)
            for name in tables:
                with contextlib.suppress(duckdb.Error):
                    con.unregister(f"_in_{name}")
            raise
        self.crash.reached("after_commit")
        return written

    def checkpoint(self) -> None:
        self.con.execute("CHECKPOINT").fetchall()

    def close(self) -> None:
        try:
            self.checkpoint()
        except duckdb.Error as err:  # a failed checkpoint leaves the WAL, which replays on open
            log.warning("checkpoint on close failed: %s", err)
        self.con.close()


def _store_offsets(
    con: duckdb.DuckDBPyConnection, group_id: str, offsets: dict[tuple[str, int], int]
) -> None:
    if not offsets:
        return
    now = datetime.now(UTC)
    rows = [
        {"group_id": group_id, "topic": t, "partition": p, "next_offset": o, "updated_at": now}
        for (t, p), o in offsets.items()
    ]
    con.register("_in_offsets", to_arrow("offsets", rows))
    try:
        con.execute("INSERT OR REPLACE INTO store.offsets SELECT * FROM _in_offsets").fetchall()
    finally:
        con.unregister("_in_offsets")


def without_erased(con: duckdb.DuckDBPyConnection, tables: dict[str, pa.Table]) -> dict[str, pa.Table]:
    """The batch's tables less the rows of trajectories erased earlier (late versions stay erased).

    One look-up of the batch's trajectory ids per batch, instead of an anti-join in every insert.
    """
    ids = pa.chunked_array(
        [t.column("trajectory_id") for t in tables.values() if "trajectory_id" in t.column_names], pa.string()
    )
    con.register("_batch_ids", pa.table({"trajectory_id": pc.unique(ids)}))
    try:
        sql = "SELECT trajectory_id FROM store.erased_trajectories SEMI JOIN _batch_ids USING (trajectory_id)"
        erased = [tid for (tid,) in con.execute(sql).fetchall()]
    finally:
        with contextlib.suppress(duckdb.Error):  # fails in an aborted transaction, which rolls back anyway
            con.unregister("_batch_ids")
    if not erased:
        return tables
    gone = pa.array(erased, pa.string())
    return {
        n: t.filter(pc.invert(pc.is_in(t.column("trajectory_id"), value_set=gone)))
        if "trajectory_id" in t.column_names
        else t
        for n, t in tables.items()
    }


def stored_schema_version(con: duckdb.DuckDBPyConnection) -> str | None:
    """The schema version a store was written at; None for a new (empty) database."""
    exists = con.execute(
        "SELECT count(*) FROM duckdb_tables() "
        "WHERE database_name = current_database() AND schema_name = 'store' AND table_name = 'meta'"
    ).fetchone()[0]
    if not exists:
        return None
    row = con.execute("SELECT value FROM store.meta WHERE key = 'store_schema_version'").fetchone()
    return row[0] if row else None


def rollback(con: duckdb.DuckDBPyConnection) -> None:
    """Roll back the open transaction, if the failure left one."""
    with contextlib.suppress(duckdb.TransactionException):
        con.execute("ROLLBACK").fetchall()


def delete_trajectories(con: duckdb.DuckDBPyConnection, trajectory_ids: Iterable[str]) -> dict[str, int]:
    """Delete every row of these trajectories from every table (caller holds the transaction)."""
    ids = sorted(set(trajectory_ids))
    if not ids:
        return {}
    con.register("_delete_ids", pa.table({"trajectory_id": pa.array(ids, pa.string())}))
    try:
        return {
            t: con.execute(
                f"DELETE FROM store.{t} WHERE trajectory_id IN (SELECT trajectory_id FROM _delete_ids)"
            ).fetchone()[0]
            for t in TRAJECTORY_TABLES
        }
    finally:
        con.unregister("_delete_ids")
