"""Right-to-erasure, end to end: delete from DuckDB, tombstone the compacted topics, tell every holder.

Order: (1) in one DuckDB transaction, delete every row of the matching trajectories from every table and
version, remember their ids in ``erased_trajectories`` (late versions of them are then dropped on
ingest) and write the audit entry to ``erasures``; (2) publish tombstones (key = trajectory id, value
None; before it, one per step record key of a by-reference trajectory, on its partition) to the audited
and train topics and ``ErasureEvent``s to the erasure topic, which the stages
(join state, step bodies, placeholders), every proxy (linking state) and the trainer's feeder (through
the train topic's tombstones) act on; (3) mark the audit entry completed and write the receipt
(``sinks.erasure_receipt``): each place, what was removed, what the operator must still do. If
publishing fails the entry says so and the command fails; running it again republishes for the ids
that entry erased. While the sink runs this executes inside it (single writer).

A tenant's key erases only its own trajectories: another tenant's trajectory id is a ``NotFound``,
another tenant's name an ``AccessDenied``, and nothing is deleted or published.

    sluice erase --trajectory 3f2a... --reason "ticket 123"
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import duckdb
import pyarrow as pa
from confluent_kafka import Producer

from sinks.erasure_models import ErasureEvent, ErasureRequest, ErasureResult
from sinks.erasure_receipt import build_receipt
from sinks.erasure_weights import erase_from_weights
from sinks.exceptions import AccessDenied, ErasureError, NotFound
from sinks.faults import CrashPlan
from sinks.principal import Principal
from sinks.settings import SinkSettings
from sinks.store import delete_trajectories, rollback
from sluice.events import REFS_SCHEMA_VERSION, new_id, scoped_trajectory_id, trajectory_owner
from sluice.step_refs import step_record_key

log = logging.getLogger(__name__)


def scoped_request(req: ErasureRequest, who: Principal) -> ErasureRequest:
    """The request in the caller's terms: a tenant's bare trajectory id is scoped to it; a trajectory or
    tenant of another tenant is refused before anything is touched."""
    if who.tenant is None:
        return req
    if req.scope == "tenant" and req.target != who.tenant:
        raise AccessDenied(f"a key of tenant {who.tenant} cannot erase another tenant")
    if req.scope == "trajectory":
        owner = trajectory_owner(req.target)
        if owner is None:
            return req.model_copy(update={"target": scoped_trajectory_id(who.tenant, req.target)})
        if owner != who.tenant:
            raise NotFound(f"no trajectory {req.target} for this key")
    return req


def audit_target(req: ErasureRequest) -> str:
    """What the ``erasures`` audit table keeps as the target: a subject id only as its SHA-256 (the
    audit entry must not hold on to the person it erased)."""
    if req.scope == "subject":
        return "sha256:" + hashlib.sha256(req.target.encode()).hexdigest()
    return req.target


def _matching_ids(con: duckdb.DuckDBPyConnection, req: ErasureRequest, who: Principal) -> list[str]:
    tenant_cond, params = ("AND tenant = ?", [who.tenant]) if who.tenant else ("", [])
    if req.scope == "tenant":
        where = "tenant = ?"
    elif req.scope == "subject":
        where = "list_contains(subject_ids, ?)"
    else:
        where = "trajectory_id = ?"
    found = con.execute(
        f"SELECT DISTINCT trajectory_id FROM store.trajectory_versions WHERE {where} {tenant_cond}",
        [req.target, *params],
    ).fetchall()
    ids = {r[0] for r in found}
    # Ids erased by an earlier attempt at the same request whose publishing failed: publish again.
    retry = con.execute(
        "SELECT e.trajectory_id FROM store.erased_trajectories e JOIN store.erasures r USING (erasure_id) "
        "WHERE r.scope = ? AND r.target = ? AND r.status <> 'completed' "
        "AND r.tenant_scope IS NOT DISTINCT FROM ?",
        [req.scope, audit_target(req), who.tenant],
    ).fetchall()
    ids |= {r[0] for r in retry}
    if req.scope == "trajectory" and not ids:
        # not stored (yet): still tombstone it and block late versions; a tenant only within its own
        # id space (scoped_request made sure the id is its own)
        ids.add(req.target)
    return sorted(ids)


def step_record_keys(con: duckdb.DuckDBPyConnection, ids: list[str]) -> list[tuple[str, int]]:
    """The keys of the step records (layout 2.0) of these trajectories that the store holds, each with
    the partition it was written to (its trajectory's: the default partitioner would put the step key
    elsewhere, and its tombstone would compact nothing)."""
    if not ids:
        return []
    con.register("_step_ids", pa.table({"trajectory_id": pa.array(ids, pa.string())}))
    try:
        rows = con.execute(
            "SELECT DISTINCT s.trajectory_id, json_extract_string(s.record, '$.event_id'), v.p "
            "FROM store.steps s JOIN (SELECT trajectory_id, max(record_partition) AS p "
            "FROM store.trajectory_versions WHERE schema_version = ? "
            "AND trajectory_id IN (SELECT trajectory_id FROM _step_ids) GROUP BY 1) v USING (trajectory_id) "
            "WHERE v.p IS NOT NULL ORDER BY 1, 2",
            [REFS_SCHEMA_VERSION],
        ).fetchall()
    finally:
        con.unregister("_step_ids")
    return [(step_record_key(tid, eid), p) for tid, eid, p in rows if eid]


def erase_in_store(
    con: duckdb.DuckDBPyConnection, req: ErasureRequest, who: Principal
) -> tuple[ErasureResult, list[str], list[tuple[str, int]]]:
    """Step (1): delete rows and write the audit entry, atomically. Returns the audit entry, the erased
    trajectory ids and the step record keys (with partitions) they had on the compacted topics."""
    now = datetime.now(UTC)
    erasure_id = new_id()
    con.execute("BEGIN TRANSACTION").fetchall()
    try:
        ids = _matching_ids(con, req, who)
        step_keys = step_record_keys(con, ids)
        deleted = delete_trajectories(con, ids)
        con.register("_erased", pa.table({"trajectory_id": pa.array(ids, pa.string())}))
        try:
            con.execute(
                "INSERT INTO store.erased_trajectories SELECT trajectory_id, ?, ? FROM _erased "
                "ON CONFLICT DO NOTHING",
                [erasure_id, now],
            ).fetchall()
        finally:
            con.unregister("_erased")
        result = ErasureResult(
            erasure_id=erasure_id,
            scope=req.scope,
            target=req.target,
            tenant_scope=who.tenant,
            requested_by=f"{req.requested_by} ({who.describe()})",
            status="erased_in_store",
            trajectories=len(ids),
            rows_deleted=deleted,
            requested_at=now,
        )
        con.execute(
            "INSERT INTO store.erasures VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, 0, NULL)",
            [
                erasure_id,
                req.scope,
                audit_target(req),
                who.tenant,
                result.requested_by,
                req.reason,
                now,
                result.status,
                len(ids),
                json.dumps(deleted),
            ],
        ).fetchall()
        con.execute("COMMIT").fetchall()
    except BaseException:
        rollback(con)
        raise
    return result, ids, step_keys


def publish_erasure(
    producer: Producer,
    cfg: SinkSettings,
    result: ErasureResult,
    ids: list[str],
    timeout_s: float,
    step_keys: Sequence[tuple[str, int]] = (),
) -> int:
    """Step (2): tombstones on the compacted topics and events on the erasure topic. Returns tombstones."""
    errors: list[str] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            errors.append(str(err))

    topics = cfg.topics
    base = {
        "erasure_id": result.erasure_id,
        "scope": result.scope,
        "target": result.target,
        "tenant_scope": result.tenant_scope,
        "requested_at": result.requested_at,
    }
    tombstones = 0
    for key, partition in step_keys:  # before the trajectory's own: its key is the last one written
        for logical in ("trajectories_audited", "trajectories_train"):
            producer.produce(
                topics.name(logical), key=key, value=None, partition=partition, on_delivery=on_delivery
            )
            tombstones += 1
    for tid in ids:
        for logical in ("trajectories_audited", "trajectories_train"):
            producer.produce(topics.name(logical), key=tid, value=None, on_delivery=on_delivery)
            tombstones += 1
        event = ErasureEvent(trajectory_id=tid, **base)
        producer.produce(
            topics.name("erasure"), key=tid, value=event.model_dump_json(), on_delivery=on_delivery
        )
        producer.poll(0)
    if result.scope != "trajectory":
        erasure_topic = topics.name("erasure")
        meta = producer.list_topics(erasure_topic, timeout=timeout_s).topics.get(erasure_topic)
        partitions = sorted(meta.partitions) if meta and meta.partitions else [0]
        for p in partitions:
            event = ErasureEvent(**base)
            producer.produce(
                erasure_topic, value=event.model_dump_json(), partition=p, on_delivery=on_delivery
            )
    left = producer.flush(timeout_s)
    if left or errors:
        detail = errors[0] if errors else f"{left} messages undelivered after {timeout_s}s"
        raise ErasureError(f"erasure {result.erasure_id}: rows deleted, publishing failed: {detail}")
    return tombstones


def mark(con: duckdb.DuckDBPyConnection, result: ErasureResult) -> None:
    con.execute(
        "UPDATE store.erasures SET status = ?, completed_at = ?, tombstones = ?, error = ? WHERE erasure_id = ?",
        [result.status, result.completed_at, result.tombstones, result.error, result.erasure_id],
    ).fetchall()


def erase(
    con: duckdb.DuckDBPyConnection,
    cfg: SinkSettings,
    req: ErasureRequest,
    who: Principal,
    producer_factory: Callable[[], Producer],
    crash: CrashPlan | None = None,
) -> ErasureResult:
    """All three steps. Raises ``ErasureError`` (audit entry kept, status publish_failed) on broker failure,
    ``AccessDenied``/``NotFound`` (nothing done) for another tenant's data."""
    req = scoped_request(req, who)
    result, ids, step_keys = erase_in_store(con, req, who)
    log.info(
        "erasure %s: %s=%s, %d trajectories, %d rows deleted",
        result.erasure_id,
        req.scope,
        "<subject>" if req.scope == "subject" else req.target,
        len(ids),
        sum(result.rows_deleted.values()),
    )
    (crash or CrashPlan(None)).reached("after_erase_db")
    try:
        tombstones = publish_erasure(
            producer_factory(), cfg, result, ids, cfg.sink.producer_timeout_s, step_keys
        )
    except Exception as err:
        failed = result.model_copy(update={"status": "publish_failed", "error": str(err)})
        mark(con, failed)
        if isinstance(err, ErasureError):
            raise
        raise ErasureError(f"erasure {result.erasure_id}: rows deleted, publishing failed: {err}") from None
    done = result.model_copy(
        update={"status": "completed", "tombstones": tombstones, "completed_at": datetime.now(UTC)}
    )
    mark(con, done)
    weights = erase_from_weights(con, cfg, ids, done.erasure_id)
    return done.model_copy(update={"places": [*build_receipt(cfg, done, ids), weights]})


def erasure_producer(cfg: SinkSettings) -> Producer:
    """A producer that gives up after ``sink.producer_timeout_s`` instead of retrying forever."""
    ms = int(cfg.sink.producer_timeout_s * 1000)
    return Producer(cfg.broker.producer_config(**{"message.timeout.ms": ms}))
