"""``sluice status``'s per-tenant policy table, from the rows a real DuckDB store's ``tenant_policies``
view gives: served version and by which scope, its lineage share, mean reward by version."""

from __future__ import annotations

from pathlib import Path

from app.status import TENANT_POLICY_SQL
from app.status_render import render_tenant_policies
from tests.sinks.test_evolution_ledger import rows
from tests.sinks.test_tenant_policies import build_store


def test_status_shows_each_tenants_served_version_lineage_and_reward_by_version(tmp_path: Path) -> None:
    build_store(tmp_path / "s.duckdb")
    lines = render_tenant_policies(rows(tmp_path / "s.duckdb", TENANT_POLICY_SQL))
    assert lines[0] == "tenant policies" and lines[1].split()[:3] == ["tenant", "served", "by"]
    by_tenant = {line.split()[0]: line for line in lines[2:]}
    assert by_tenant["acme"].split()[1:3] == ["acme.1", "own"]
    assert "parent 0, 2 own rows, 1 tenant(s)" in by_tenant["acme"]
    assert "0: 0.2 (2)  acme.1: 0.9 (2)" in by_tenant["acme"]
    assert by_tenant["globex"].split()[1:3] == ["globex.1", "own"]
    assert by_tenant["initech"].split()[1:3] == ["1", "shared"]
    assert render_tenant_policies("sink down") == ["policies  sink down"]
