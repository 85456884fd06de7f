"""Use the DuckDB file directly when no sink runs: read-only for queries, read-write for erasure.

sluice query "SELECT count(*) FROM trajectories"   # with the sink stopped
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from sinks.erasure import erase, erasure_producer
from sinks.erasure_models import ErasureRequest, ErasureResult
from sinks.exceptions import SinkError
from sinks.principal import resolve_principal
from sinks.scoped_query import run_query
from sinks.settings import SinkSettings
from sinks.store import DuckDBStore, connect, is_lock_conflict


def _locked(err: SinkError) -> SinkError:
    if is_lock_conflict(err):
        return SinkError(
            f"{err}\nanother process holds the database; if it is a sink, give it a query_port "
            "(sluice query/export/erase go through it)"
        )
    return err


class LocalStoreClient:
    def __init__(self, cfg: SinkSettings, api_key: str | None) -> None:
        self.cfg = cfg
        self.path = cfg.path(cfg.sink.database)
        self.principal = resolve_principal(cfg, api_key)
        self.where = f"file {self.path}"

    def query(self, sql: str) -> pa.RecordBatchReader:
        try:
            con = connect(self.path, read_only=True)
        except SinkError as err:
            raise _locked(err) from None
        try:
            stream = run_query(con.cursor(), sql, self.principal)
        except BaseException:
            con.close()
            raise

        def batches() -> Iterator[pa.RecordBatch]:
            try:
                yield from stream.reader
            finally:
                stream.close()
                con.close()

        return pa.RecordBatchReader.from_batches(stream.schema, batches())

    def erase(self, request: ErasureRequest) -> ErasureResult:
        try:
            store = DuckDBStore.for_sink(self.path, self.cfg.sink)
        except SinkError as err:
            raise _locked(err) from None
        try:
            return erase(store.con, self.cfg, request, self.principal, lambda: erasure_producer(self.cfg))
        finally:
            store.close()

    def close(self) -> None:
        pass
