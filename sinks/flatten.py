"""Turn audited records into rows of the store's tables: pure functions, no DuckDB, no Kafka.

A ``Trajectory`` version becomes one ``trajectory_versions`` row (its header JSON without steps, its
eligibility decision, the join stage's train decision as it came, and where it was read: the lineage),
one ``steps`` row per step (the columns queries filter on, the redaction counts and the step's full
JSON, keyed by trajectory and step index) and one ``rewards`` row per reward, all built by ``rows_of``
from the trajectory's attributes: the model (its JSON dumped), or the mirror types of
``sinks.wire_mirror`` as ``sinks.received`` decodes them (its JSON stored as received). A version whose steps travel by reference (layout 2.0) gives its header row (step count and totals
from its ``steps_ref``) and reward rows; each ``TrajectoryStep`` record gives one ``steps`` row
(``step_record_rows``). Credentials that slipped into a step's recorded
headers are scrubbed before anything is stored. A dead letter whose source is a raw topic keeps only
the hash and size of its original bytes: raw traffic never reaches DuckDB.

    pytest tests/sinks/test_flatten.py
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

from sluice.events import DeadLetter, StepEvent, Trajectory, trajectory_version_id
from sluice.evolution import LedgerEntry

Row = dict[str, Any]


@dataclass(slots=True)
class SourceRecord:
    """One consumed Kafka record (what the sink needs of it). Not frozen: the sink makes one per consumed
    record, and a frozen dataclass's ``__init__`` costs 2.4 times as much."""

    topic: str
    partition: int
    offset: int
    key: str | None
    value: bytes | None

    @property
    def position(self) -> str:
        return f"{self.topic}:{self.partition}:{self.offset}"


_ENCODER = json.JSONEncoder(separators=(",", ":"), default=str)  # one instance: dumps() builds one per call


def _json(obj: Any) -> str | None:
    return None if obj is None else _ENCODER.encode(obj)


@lru_cache(maxsize=4096)
def _entities_json(counts: tuple[tuple[str, int], ...]) -> str:
    """A redaction report's entity counts as JSON, keys sorted (few distinct ones: computed once each)."""
    return _ENCODER.encode(dict(counts))


def scrub_headers(step: StepEvent, sensitive: Iterable[str]) -> StepEvent:
    """The step without recorded headers named like credentials (case-insensitive)."""
    headers = step.metadata.request_headers
    banned = {h.lower() for h in sensitive}
    if not headers or not any(k.lower() in banned for k in headers):
        return step
    kept = {k: v for k, v in headers.items() if k.lower() not in banned}
    return step.model_copy(update={"metadata": step.metadata.model_copy(update={"request_headers": kept})})


def unredacted_steps(t: Any, steps: list[Any]) -> list[int]:
    """Indexes of ``steps`` not marked redacted, neither on the step nor on the trajectory ``t`` (a
    ``Trajectory`` and its steps, or their wire mirrors)."""
    if t.governance.redaction == "redacted":
        return []
    return [s.step_index for s in steps if s.governance.redaction != "redacted"]


def _step_row(t: Any, step: Any, record: str, now: datetime) -> Row:
    """Columns of a step (a ``StepEvent`` or its wire mirror: the same attributes) and its JSON ``record``."""
    meta, result, gov = step.metadata, step.action_result, step.governance
    gen_ai = meta.gen_ai
    choices = step.action.choices
    report = gov.redaction_report
    entities = report.entities if report is not None else None
    return {
        "trajectory_id": t.trajectory_id,
        "step_index": step.step_index,
        "tenant": t.tenant,
        "session_id": step.session_id or getattr(t, "session_id", None),
        "since_version": t.version,
        "created_at": step.created_at,
        "request_model": gen_ai.request_model,
        "response_model": gen_ai.response_model,
        "model_version": meta.model_version,
        "finish_reason": choices[0].finish_reason if choices else None,
        "input_tokens": gen_ai.usage_input_tokens,
        "output_tokens": gen_ai.usage_output_tokens,
        "latency_ms": meta.latency_ms,
        "ttft_ms": meta.time_to_first_token_ms,
        "cost_usd": meta.cost_usd,
        "error": result.error,
        "status_code": result.status_code,
        "redaction": gov.redaction,
        "data_class": gov.data_class,
        "entity_count": sum(entities.values()) if entities is not None else None,
        "entities": _entities_json(tuple(sorted(entities.items()))) if entities is not None else None,
        "record": record,
        "ingested_at": now,
    }


def _lineage(rec: SourceRecord) -> Row:
    """Where a stored row was read (the lineage view's topic, partition and offset)."""
    return {"record_topic": rec.topic, "record_partition": rec.partition, "record_offset": rec.offset}


def _sum(values: Iterable[float | int | None]) -> float | int | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def trajectory_rows(t: Trajectory, rec: SourceRecord, now: datetime) -> dict[str, list[Row]]:
    """Rows of every table for one trajectory version read at ``rec`` (steps already scrubbed)."""
    return rows_of(
        t,
        t.steps,
        t.model_dump_json(exclude={"steps"}, exclude_none=True),
        [s.model_dump_json(exclude_none=True) for s in t.steps],
        rec,
        now,
    )


def rows_of(
    t: Any, steps: list[Any], header_json: str, step_json: list[str], rec: SourceRecord, now: datetime
) -> dict[str, list[Row]]:
    """Rows of every table for one trajectory version: ``t`` and ``steps`` are a ``Trajectory`` and its
    steps, or their wire mirrors (``sinks.wire_mirror``: the same attribute names); ``header_json`` is its
    JSON without steps and ``step_json`` each step's JSON (what the ``record`` columns store)."""
    gov = t.governance
    elig, replay, blockers = gov.eligibility, gov.replay, t.train_blockers
    tid, version, tenant = t.trajectory_id, t.version, t.tenant
    step_rows = [_step_row(t, s, j, now) for s, j in zip(steps, step_json, strict=True)]
    rewards = _reward_rows(t, [*t.rewards, *(r for s in steps for r in s.rewards)], now)
    ref = getattr(t, "steps_ref", None)  # layout 2.0: the steps came as records of their own
    if ref is not None:
        totals: Row = {
            "step_count": ref.count,
            "input_tokens": ref.input_tokens,
            "output_tokens": ref.output_tokens,
            "cost_usd": ref.cost_usd,
            "models": list(ref.models),
            "model_versions": list(ref.model_versions),
        }
    else:
        totals = {
            "step_count": len(step_rows),
            "input_tokens": _sum(s["input_tokens"] for s in step_rows) or 0,
            "output_tokens": _sum(s["output_tokens"] for s in step_rows) or 0,
            "cost_usd": _sum(s["cost_usd"] for s in step_rows),
            "models": sorted({s["response_model"] or s["request_model"] for s in step_rows} - {None, ""}),
            "model_versions": sorted({s["model_version"] for s in step_rows} - {None, ""}),
        }
    retention = gov.retention_deadline or (elig.retention_deadline if elig is not None else None)
    header = {
        "event_id": trajectory_version_id(tid, version),
        "trajectory_id": tid,
        "version": version,
        "tenant": tenant,
        "session_id": t.session_id,
        "status": t.status,
        "rewarded": t.rewarded,
        "reward": t.reward,
        "reward_count": len(rewards),
        **totals,
        "first_step_at": t.first_step_at,
        "ended_at": t.ended_at,
        "emitted_at": t.emitted_at,
        "created_at": t.created_at,
        "data_class": gov.data_class,
        "consent_training": gov.consent.training,
        "retention_deadline": retention,
        "subject_ids": list(gov.subject_ids),
        "redaction": gov.redaction,
        "eligibility": elig.decision if elig is not None else None,
        "eligibility_reasons": list(elig.reasons) if elig is not None else None,
        "policy_version": elig.policy_version if elig is not None else None,
        "replay_grade": replay.grade if replay is not None else None,
        "replay_reasons": list(replay.reasons) if replay is not None else None,
        "train_blockers": None if blockers is None else list(blockers),
        "schema_version": t.schema_version,
        "record": header_json,
        "ingested_at": now,
        **_lineage(rec),
    }
    return {
        "trajectory_versions": [header],
        "steps": step_rows,
        "rewards": list(rewards.values()),
    }


def _reward_rows(t: Any, rewards: Iterable[Any], now: datetime) -> dict[str, Row]:
    """One row per reward id (the first seen wins), first seen in version ``t.version``."""
    rows: dict[str, Row] = {}
    for r in rewards:
        rows.setdefault(
            r.reward_id,
            {
                "reward_id": r.reward_id,
                "trajectory_id": t.trajectory_id,
                "tenant": t.tenant,
                "name": r.name,
                "kind": r.kind,
                "value": r.value,
                "critique": r.critique,
                "source": r.source,
                "step_index": r.step_index,
                "created_at": r.created_at,
                "first_version": t.version,
                "ingested_at": now,
            },
        )
    return rows


def step_record_rows(t: Any, step: Any, step_json: str, now: datetime) -> dict[str, list[Row]]:
    """Rows of a step record (layout 2.0; ``t`` a ``TrajectoryStep`` or its wire mirror, ``step`` its step):
    its ``steps`` row, keyed like every step, stored since the version it came with, and the rows of the
    rewards it carries; ``step_json`` is the step's JSON."""
    row = _step_row(t, step, step_json, now)
    if not step.rewards:  # the common case: no dictionary of reward rows to build
        return {"steps": [row], "rewards": []}
    return {"steps": [row], "rewards": list(_reward_rows(t, step.rewards, now).values())}


def dead_letter_row(dl: DeadLetter, rec: SourceRecord, withhold_original: bool, now: datetime) -> Row:
    """A dead letter from a stage, read at ``rec``. ``withhold_original``: keep only hash and size of
    its bytes."""
    try:
        original = base64.b64decode(dl.original_b64, validate=False) if dl.original_b64 else b""
    except ValueError:
        original = dl.original_b64.encode()
    return {
        "event_id": dl.event_id,
        "trajectory_id": dl.key,
        "stage": dl.stage,
        "reason": dl.reason,
        "error_type": dl.error_type,
        "source_topic": dl.source_topic,
        "source_partition": dl.source_partition,
        "source_offset": dl.source_offset,
        "key": dl.key,
        "original_b64": None if withhold_original else dl.original_b64,
        "original_sha256": hashlib.sha256(original).hexdigest() if original else None,
        "original_bytes": len(original),
        "original_withheld": withhold_original,
        "created_at": dl.created_at,
        "ingested_at": now,
        **_lineage(rec),
    }


def invalid_row(
    rec: SourceRecord, reason: str, error_type: str, now: datetime, withhold_original: bool = False
) -> Row:
    """A record the sink itself could not store; its identity is its position, so replays upsert."""
    value = rec.value or b""
    return {
        "event_id": f"sink:{rec.position}",
        "trajectory_id": rec.key,
        "stage": "sink",
        "reason": reason,
        "error_type": error_type,
        "source_topic": rec.topic,
        "source_partition": rec.partition,
        "source_offset": rec.offset,
        "key": rec.key,
        "original_b64": None if withhold_original else base64.b64encode(value).decode(),
        "original_sha256": hashlib.sha256(value).hexdigest(),
        "original_bytes": len(value),
        "original_withheld": withhold_original,
        "created_at": now,
        "ingested_at": now,
        **_lineage(rec),
    }


def ledger_row(entry: LedgerEntry, rec: SourceRecord, now: datetime) -> Row:
    """One ``evolution_ledger`` row: every field of the entry, evidence and diff as JSON text."""
    return {
        "entry_id": entry.entry_id,
        "event_type": entry.event_type,
        "proposal_id": entry.proposal_id,
        "kind": entry.kind,
        "surface": entry.surface,
        "tenant": entry.tenant,
        "task_id": entry.task_id,
        "gate": entry.gate,
        "passed": entry.passed,
        "decision": entry.decision,
        "summary": entry.summary,
        "evidence": _json(entry.evidence),
        "diff": _json(entry.diff),
        "overlay_id": entry.overlay_id,
        "previous_overlay_id": entry.previous_overlay_id,
        "policy_version": entry.policy_version,
        "actor": entry.actor,
        "created_at": entry.created_at,
        "ingested_at": now,
        **_lineage(rec),
    }
