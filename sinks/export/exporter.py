"""Export a query's trajectories (default: the training set) to JSONL or Parquet, with a manifest.

The query runs through the same client as ``sluice query`` (the running sink, else the file), with the
caller's tenant scope. When its result has a ``trajectory_id`` column, each row is joined to its stored
version (``version`` column if present, else the latest) and its steps, and written in the RL/SFT
layout of ``sinks.export.layout``; the query's other columns ride along. Without ``trajectory_id`` the
rows are written as they are. ``layout='dpo'`` writes preference pairs built from step feedback
(``sinks.export.preference``), ``layout='verl'`` verl's RL dataset rows (``sinks.export.verl_layout``).
Results stream batch by batch; the file appears under its name only when
complete, next to ``<file>.manifest.json`` (query, scope, counts, policy and model versions, sha256).

    sluice export --format jsonl --query "SELECT * FROM training_set WHERE tenant = 'acme'" --out acme.jsonl
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import pyarrow as pa
from pydantic import BaseModel, Field

from sinks.base import ExportWriter, StoreClient
from sinks.exceptions import ExportError
from sinks.export.digest import file_sha256
from sinks.export.jsonl_writer import JsonlWriter
from sinks.export.layout import RL_SCHEMA, Granularity, rl_rows
from sinks.export.parquet_writer import ParquetWriter
from sinks.export.preference import DPO_SCHEMA, Feedback, JudgedAnswer, judged_answers, preference_pairs
from sinks.export.verl_layout import VERL_SCHEMA, verl_row
from sinks.schema import STORE_SCHEMA_VERSION
from sluice.events import StepEvent, Trajectory

EXPORT_SCHEMA_VERSION = "sluice.export/1"
DEFAULT_QUERY = "SELECT * FROM training_set"
WRITERS: dict[str, type[ExportWriter]] = {"jsonl": JsonlWriter, "parquet": ParquetWriter}
Layout = Literal["auto", "rl", "rows", "dpo", "verl"]
TRAJECTORY_LAYOUTS = ("rl", "dpo", "verl")  # layouts built from stored trajectories (need trajectory_id)


class ExportManifest(BaseModel):
    schema_version: str = EXPORT_SCHEMA_VERSION
    store_schema_version: str = STORE_SCHEMA_VERSION
    created_at: datetime
    format: str
    layout: Literal["rl", "rows", "dpo", "verl"]
    granularity: Granularity
    query: str
    source: str
    scope: str
    file: str
    bytes: int
    sha256: str
    rows: int
    trajectories: int = 0
    skipped: int = Field(0, description="Query rows whose trajectory version is not in the store.")
    tenants: list[str] = Field(default_factory=list)
    policy_versions: list[str] = Field(default_factory=list)
    model_versions: list[str] = Field(default_factory=list)
    columns: list[str] = Field(default_factory=list)
    trajectory_ids: list[str] = Field(
        default_factory=list, description="Every trajectory in the file: erasure receipts look here."
    )


def manifest_path(out: Path) -> Path:
    return out.with_name(out.name + ".manifest.json")


def _rl_sql(user_sql: str, names: list[str], feedback: bool = False) -> str:
    version = (
        "tv.version = __q.version"
        if "version" in names
        else "tv.version = (SELECT max(v.version) FROM trajectory_versions v "
        "WHERE v.trajectory_id = __q.trajectory_id)"
    )
    return (
        f"WITH __q AS ({user_sql}) "
        "SELECT __q.*, tv.record AS __header, "
        "(SELECT list(s.record ORDER BY s.step_index) FROM steps s "
        "WHERE s.trajectory_id = __q.trajectory_id) AS __steps "
        + (
            ", (SELECT list(struct_pack(kind := r.name, step_index := r.step_index, at := r.created_at)) "
            "FROM rewards r WHERE r.trajectory_id = __q.trajectory_id AND r.kind = 'feedback' "
            "AND r.step_index IS NOT NULL AND r.first_version <= tv.version) AS __feedback "
            if feedback
            else ""
        )
        + f"FROM __q LEFT JOIN trajectory_versions tv ON tv.trajectory_id = __q.trajectory_id AND {version}"
    )


def export(
    client: StoreClient,
    out: Path,
    fmt: str = "jsonl",
    query: str | None = None,
    granularity: Granularity = "trajectory",
    layout: Layout = "auto",
    scope: str = "operator",
) -> ExportManifest:
    """Write the export and its manifest; returns the manifest."""
    if fmt not in WRITERS:
        raise ExportError(f"unknown export format {fmt!r}: use {', '.join(WRITERS)}")
    user_sql = (query or DEFAULT_QUERY).strip().rstrip(";").strip()
    probe = client.query(f"SELECT * FROM ({user_sql}) AS __probe LIMIT 0")
    schema = probe.schema
    probe.read_all()
    names = schema.names
    chosen = ("rl" if "trajectory_id" in names else "rows") if layout == "auto" else layout
    if chosen in TRAJECTORY_LAYOUTS and "trajectory_id" not in names:
        raise ExportError(f"the {chosen} layout needs a trajectory_id column in the query result")
    extras = [f for f in schema if f.name not in RL_SCHEMA.names and not f.name.startswith("__")]
    out_schema = {
        "rl": pa.schema([*RL_SCHEMA, *extras]),
        "dpo": DPO_SCHEMA,
        "verl": VERL_SCHEMA,
    }.get(chosen, schema)
    judged: list[JudgedAnswer] = []
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    stats: dict[str, set[str]] = {"traj": set(), "tenants": set(), "policy": set(), "models": set()}
    skipped = 0
    try:
        with WRITERS[fmt](partial, out_schema) as writer:
            sql = _rl_sql(user_sql, names, chosen == "dpo") if chosen in TRAJECTORY_LAYOUTS else user_sql
            reader = client.query(sql)
            for batch in reader:
                rows = batch.to_pylist()
                if chosen == "rows":
                    writer.write(rows)
                    stats["traj"] |= {r["trajectory_id"] for r in rows if r.get("trajectory_id")}
                    continue
                produced = []
                for row in rows:
                    if row.get("__header") is None:
                        skipped += 1
                        continue
                    header = Trajectory.model_validate_json(row["__header"])
                    steps = [StepEvent.model_validate_json(s) for s in row.get("__steps") or []]
                    stats["models"] |= {s.metadata.model_version for s in steps} - {None}
                    stats["traj"].add(header.trajectory_id)
                    stats["tenants"].add(header.tenant)
                    if header.governance.eligibility and header.governance.eligibility.policy_version:
                        stats["policy"].add(header.governance.eligibility.policy_version)
                    if chosen == "dpo":
                        feedback = [Feedback(**f) for f in row.get("__feedback") or []]
                        judged += judged_answers(header, steps, feedback)
                        continue  # pairs may span trajectories: written once all are read
                    if chosen == "verl":
                        vrow = verl_row(header, steps, index=writer.rows + len(produced))
                        produced += [vrow] if vrow else []
                    else:
                        extra = {f.name: row.get(f.name) for f in extras}
                        produced += [{**r, **extra} for r in rl_rows(header, steps, granularity)]
                writer.write(produced)
            if chosen == "dpo":
                pairs = preference_pairs(judged)
                writer.write(pairs)
                stats["traj"] = {p[k] for p in pairs for k in ("trajectory_id", "chosen_trajectory_id")}
                stats["tenants"] = {p["tenant"] for p in pairs}
            rows_written = writer.rows
        partial.replace(out)
    finally:
        partial.unlink(missing_ok=True)
    manifest = ExportManifest(
        created_at=datetime.now(UTC),
        format=fmt,
        layout=chosen,
        granularity=granularity,
        query=user_sql,
        source=client.where,
        scope=scope,
        file=out.name,
        bytes=out.stat().st_size,
        sha256=file_sha256(out),
        rows=rows_written,
        trajectories=len(stats["traj"]),
        skipped=skipped,
        tenants=sorted(stats["tenants"]),
        policy_versions=sorted(stats["policy"]),
        model_versions=sorted(stats["models"]),
        columns=out_schema.names,
        trajectory_ids=sorted(stats["traj"]),
    )
    manifest_path(out).write_text(manifest.model_dump_json(indent=2) + "\n")
    return manifest
