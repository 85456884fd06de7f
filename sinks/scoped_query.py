"""Run one read-only query for a principal on its own DuckDB cursor, as a stream of Arrow batches.

For a tenant, the cursor gets TEMP views named like the user views but filtered to the tenant (they
shadow ``main``), and ``query_guard`` checks that the query names nothing else. The same code runs in
the sink process (on a cursor of the writer's connection) and in ``sluice query`` when no sink runs (on
a read-only connection of the file).

    sluice query --api-key sk-sluice-acme "SELECT trajectory_id, reward FROM training_set"
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pyarrow as pa

from sinks.exceptions import QueryError
from sinks.principal import Principal
from sinks.query_guard import check_read_only, check_tenant_scope
from sinks.views import TENANT_VIEWS, tenant_view_ddl

BATCH_ROWS = 8192


@dataclass
class QueryStream:
    """An open result: read ``reader`` to the end (or not), then ``close``."""

    reader: pa.RecordBatchReader
    cursor: duckdb.DuckDBPyConnection

    @property
    def schema(self) -> pa.Schema:
        return self.reader.schema

    def read_all(self) -> pa.Table:
        try:
            return self.reader.read_all()
        finally:
            self.close()

    def close(self) -> None:
        self.cursor.close()


def scope_cursor(cur: duckdb.DuckDBPyConnection, principal: Principal) -> None:
    """Make the user views on this (fresh) cursor resolve to the principal's rows."""
    cur.execute("SET python_enable_replacements = false").fetchall()
    if principal.tenant is not None:
        for stmt in tenant_view_ddl(principal.tenant):
            cur.execute(stmt).fetchall()


def run_query(cur: duckdb.DuckDBPyConnection, sql: str, principal: Principal) -> QueryStream:
    """Check and start ``sql`` on ``cur``, a fresh cursor this call owns (closed with the stream).

    Raises ``QueryRejected``, or ``QueryError`` with DuckDB's message.
    """
    sql = sql.strip().rstrip(";").strip()
    try:
        if not sql:
            raise QueryError("empty query")
        scope_cursor(cur, principal)
        check_read_only(cur, sql, operator=principal.is_operator)
        if principal.tenant is not None:
            check_tenant_scope(cur, sql, frozenset(TENANT_VIEWS))
        reader = cur.sql(sql).to_arrow_reader(BATCH_ROWS)
    except duckdb.Error as err:
        cur.close()
        raise QueryError(str(err)) from None
    except BaseException:
        cur.close()
        raise
    return QueryStream(reader=reader, cursor=cur)
