"""Write the sink's batches on a thread of their own, so the next batch is decoded while one is inserted.

DuckDB releases the GIL while it inserts, so the ingest loop's decoding (Python) and the insert (DuckDB's
threads) overlap. One batch is written at a time and in order: ``submit`` converts the batch to Arrow
on the caller's thread (Python work), waits for the batch before it, then starts the transaction. The
writer uses its own cursor of the store: DuckDB connections are not thread-safe, and readers on the
store's connection see each batch once it is committed, offsets included. A failed write is raised
by the next ``submit`` or ``finish``, and nothing after it is written: the stored offsets still point
before it.

    pytest tests/sinks/test_writer.py
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import duckdb

from sinks.batch import PendingBatch
from sinks.exceptions import SinkError
from sinks.store import DuckDBStore


@dataclass(frozen=True)
class Written:
    """A batch committed to the store: rows per table and the seconds from submit to commit."""

    batch: PendingBatch
    rows: dict[str, int]
    seconds: float


@dataclass(frozen=True)
class _InFlight:
    batch: PendingBatch
    future: Future[dict[str, int]]
    started: float


class BatchWriter:
    """The one writer of a store's batches (used from the ingest loop's thread)."""

    def __init__(self, store: DuckDBStore, group_id: str) -> None:
        self._store = store
        self._group_id = group_id
        self._con = store.cursor()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sink-writer")
        self._in_flight: _InFlight | None = None

    def submit(self, batch: PendingBatch) -> Written | None:
        """Start writing ``batch``; returns the batch written before it, once committed (None: none)."""
        started = time.perf_counter()
        converted, tables = self._store.arrow_tables(batch)
        previous = self.finish()
        future = self._pool.submit(self._store.write_tables, converted, tables, self._group_id, self._con)
        self._in_flight = _InFlight(batch, future, started)
        return previous

    def finish(self) -> Written | None:
        """Wait for the batch being written; returns it once committed (None: none was being written)."""
        job, self._in_flight = self._in_flight, None
        if job is None:
            return None
        try:
            rows = job.future.result()
        except duckdb.Error as err:  # nothing of the batch is committed; a restart re-reads it
            raise SinkError(f"writing a batch to {self._store.path} failed: {err}") from err
        return Written(job.batch, rows, time.perf_counter() - job.started)

    def done(self) -> bool:
        """Whether a batch was being written and is now committed or failed (``finish`` returns at once)."""
        return self._in_flight is not None and self._in_flight.future.done()

    def close(self) -> None:
        """Wait for the batch being written (its error is not raised), then release the thread and cursor."""
        self._pool.shutdown(wait=True)
        self._in_flight = None
        self._con.close()
