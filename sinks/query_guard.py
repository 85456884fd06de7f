"""Refuse queries that are not read-only, or that could reach past the caller's tenant.

Uses DuckDB's own parser: ``extract_statements`` for the statement type and ``json_serialize_sql`` for
the parse tree. A tenant's query may only name the tenant views (``schema.TENANT_VIEWS``) unqualified,
plus its own CTEs; schema-qualified names (``store.steps``, ``main.steps``, ``information_schema...``),
other tables and views, file scans and table functions other than ``unnest``/``range``/``generate_series``
are refused before anything runs. A CTE may not take the name of another catalog object, so it cannot
re-expose an unfiltered view through its own body. The operator may run any single SELECT or EXPLAIN.

    pytest tests/sinks/test_query_guard.py
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import duckdb

from sinks.exceptions import QueryError, QueryRejected

SAFE_TABLE_FUNCTIONS = frozenset({"unnest", "range", "generate_series"})
_REFUSED_REFS = frozenset({"SHOW_REF", "COLUMN_DATA", "DELIM_GET", "BOUND_TABLE_REF", "INVALID"})


def check_read_only(con: duckdb.DuckDBPyConnection, sql: str, operator: bool) -> None:
    """Exactly one SELECT (or EXPLAIN for the operator); DuckDB's parser message on a syntax error."""
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as err:
        raise QueryError(str(err)) from None
    if len(statements) != 1:
        raise QueryRejected(f"expected exactly one statement, got {len(statements)}")
    kind = statements[0].type
    allowed = {duckdb.StatementType.SELECT} | ({duckdb.StatementType.EXPLAIN} if operator else set())
    if kind not in allowed:
        raise QueryRejected(f"only read-only SELECT queries are allowed here, not {kind.name}")


def _nodes(tree: Any) -> Iterator[dict[str, Any]]:
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def parse_tree(con: duckdb.DuckDBPyConnection, sql: str) -> dict[str, Any]:
    tree = json.loads(con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0])
    if tree.get("error"):
        msg = tree.get("error_message", "cannot parse")
        raise QueryRejected(f"this query form is not available to tenant queries ({msg})")
    return tree


def catalog_names(con: duckdb.DuckDBPyConnection) -> set[str]:
    rows = con.execute(
        "SELECT lower(table_name) FROM duckdb_tables() UNION SELECT lower(view_name) FROM duckdb_views()"
    ).fetchall()
    return {r[0] for r in rows}


def check_tenant_scope(con: duckdb.DuckDBPyConnection, sql: str, allowed: frozenset[str]) -> None:
    """Refuse a tenant query that names anything but the tenant views and its own CTEs."""
    nodes = list(_nodes(parse_tree(con, sql)))
    ctes = {
        entry["key"].lower()
        for n in nodes
        if isinstance(n.get("cte_map"), dict)
        for entry in n["cte_map"].get("map", [])
    }
    shadowing = ctes & (catalog_names(con) - allowed)
    if shadowing:
        raise QueryRejected(f"CTE names may not reuse catalog names: {', '.join(sorted(shadowing))}")
    visible = allowed | ctes
    for n in nodes:
        kind = n.get("type")
        if kind == "BASE_TABLE":
            name = str(n.get("table_name", ""))
            if n.get("schema_name") or n.get("catalog_name"):
                qualified = ".".join(x for x in (n.get("catalog_name"), n.get("schema_name"), name) if x)
                raise QueryRejected(f"{qualified}: qualified names are not available; use {_menu(allowed)}")
            if name.lower() not in visible:
                raise QueryRejected(f"{name}: not available to tenant queries; use {_menu(allowed)}")
        elif kind == "TABLE_FUNCTION":
            fn = str((n.get("function") or {}).get("function_name", "")).lower()
            if fn not in SAFE_TABLE_FUNCTIONS:
                raise QueryRejected(f"table function {fn}() is not available to tenant queries")
        elif kind in _REFUSED_REFS:
            raise QueryRejected(f"{kind} is not available to tenant queries")


def _menu(allowed: frozenset[str]) -> str:
    return ", ".join(sorted(allowed))
