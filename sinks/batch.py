"""A batch of consumed records on its way into DuckDB: decoded, flattened, de-duplicated, with offsets.

Each record is decoded as it arrives (so CPU is spread over the wait) and filed per table by primary
key: a re-delivered or repeated record replaces itself instead of adding a row, and a step keeps the
oldest version that has its content. A tombstone (value None, key = trajectory id) on the audited topic
drops that trajectory's rows pending in the batch and schedules a delete of its stored rows, so a later
version in the same batch still lands. Bad records become dead-letter rows with their reason; nothing
is skipped silently, and every record advances its partition's next offset.

    pytest tests/sinks/test_batch.py
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

import pyarrow as pa
from pydantic import ValidationError

from sinks.arrow_tables import gc_paused, to_arrow
from sinks.flatten import (
    Row,
    SourceRecord,
    dead_letter_row,
    invalid_row,
    ledger_row,
    rows_of_fields,
    scrub_headers,
    trajectory_rows,
    unredacted_steps,
)
from sinks.received import ReceivedTrajectory, receive_trajectory
from sluice.errors import validation_summary
from sluice.events import DeadLetter, Trajectory, decode
from sluice.evolution import LedgerEntry

E = TypeVar("E", Trajectory, DeadLetter)

# Primary key of each batched table (what a repeat replaces).
KEYS: dict[str, tuple[str, ...]] = {
    "trajectory_versions": ("event_id",),
    "steps": ("trajectory_id", "step_index"),
    "rewards": ("reward_id",),
    "dead_letters": ("event_id",),
    "evolution_ledger": ("entry_id",),
}
# Tables where a newer version's row replaces an older one only when its content changed.
_VERSIONED = ("steps",)


@dataclass(frozen=True)
class BatchTopics:
    """Which consumed topic plays which role."""

    audited: str
    deadletter: str
    raw: frozenset[str] = frozenset()
    ledger: str | None = None  # the control plane's ledger (LedgerEntry records)


def _has_headers(steps: list[dict[str, Any]], sensitive: tuple[str, ...]) -> bool:
    """Whether any step recorded a header named like one of ``sensitive`` (case-insensitive)."""
    banned = {h.lower() for h in sensitive}
    return any(k.lower() in banned for s in steps for k in s["metadata"]["request_headers"])


def validation_reason(err: ValidationError, limit: int = 5) -> str:
    """Pydantic errors as one line, without the offending input values (they may hold PII)."""
    return "invalid record: " + validation_summary(err, limit)


@dataclass
class RecordCounts:
    trajectories: int = 0
    dead_letters: int = 0
    invalid: int = 0
    tombstones: int = 0
    ledger_entries: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class PendingBatch:
    """Records consumed since the last write. Not thread-safe: the ingest loop owns it."""

    topics: BatchTopics
    sensitive_headers: tuple[str, ...] = ()
    require_redacted: bool = True
    apply_tombstones: bool = True
    tables: dict[str, dict[tuple[Any, ...], Row]] = field(default_factory=lambda: {t: {} for t in KEYS})
    deletes: set[str] = field(default_factory=set)
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    counts: RecordCounts = field(default_factory=RecordCounts)
    rows: int = 0
    records: int = 0
    first_at: float | None = None
    sources: list[SourceRecord] = field(default_factory=list)

    def __len__(self) -> int:
        return self.records

    def age_s(self) -> float:
        return 0.0 if self.first_at is None else time.monotonic() - self.first_at

    def add(self, rec: SourceRecord, now: datetime | None = None) -> None:
        with gc_paused():  # decoding allocates many objects; collect once per record, not every 700
            self._add(rec, now or datetime.now(UTC))

    def add_all(self, recs: Iterable[SourceRecord], now: datetime | None = None) -> None:
        """``add`` each of ``recs`` (what one poll returned), collecting garbage once for all of them."""
        now = now or datetime.now(UTC)
        with gc_paused():
            for rec in recs:
                self._add(rec, now)

    def _add(self, rec: SourceRecord, now: datetime) -> None:
        if self.first_at is None:
            self.first_at = time.monotonic()
        self.records += 1
        self.sources.append(rec)
        self.offsets[(rec.topic, rec.partition)] = rec.offset + 1
        if rec.topic == self.topics.deadletter:
            self._add_dead_letter(rec, now)
        elif rec.topic == self.topics.ledger:
            self._add_ledger_entry(rec, now)
        elif rec.value is None:
            self._add_tombstone(rec)
        else:
            self._add_trajectory(rec, now)

    def _put(self, table: str, row: Row) -> None:
        key = tuple(row[k] for k in KEYS[table])
        old = self.tables[table].get(key)
        if old is None:
            self.rows += 1
        elif table in _VERSIONED and (
            old["content_hash"] == row["content_hash"] or old["since_version"] > row["since_version"]
        ):
            return
        self.tables[table][key] = row

    def _invalid(
        self, rec: SourceRecord, reason: str, error_type: str, now: datetime, withhold: bool
    ) -> None:
        self.counts.invalid += 1
        self._put("dead_letters", invalid_row(rec, reason, error_type, now, withhold_original=withhold))

    def _decoded(self, rec: SourceRecord, kind: type[E], what: str, now: datetime) -> E | None:
        """The record's event when it decodes to a ``kind`` (``what`` names one in the reason); else the
        record is kept as invalid and None."""
        try:
            event = decode(rec.value or b"")
        except ValidationError as err:
            self._invalid(rec, validation_reason(err), "ValidationError", now, withhold=False)
            return None
        if not isinstance(event, kind):
            reason = f"expected {what} on {rec.topic}, got a {event.event_type} event"
            self._invalid(rec, reason, "WrongEventType", now, withhold=False)
            return None
        return event

    def _add_trajectory(self, rec: SourceRecord, now: datetime) -> None:
        received = receive_trajectory(rec.value or b"")
        if received is None or not self._add_received(received, rec, now):
            self._add_trajectory_model(rec, now)

    def _add_received(self, received: ReceivedTrajectory, rec: SourceRecord, now: datetime) -> bool:
        """Store a wire-form trajectory as received; False when it needs the model path (credentials
        in recorded headers are scrubbed there, which changes the step's JSON)."""
        t = received.fields
        if self.sensitive_headers and _has_headers(t["steps"], self.sensitive_headers):
            return False
        if rec.key is not None and rec.key != t["trajectory_id"]:
            reason = f"record key {rec.key!r} is not its trajectory_id {t['trajectory_id']!r}"
            self._invalid(rec, reason, "KeyMismatch", now, withhold=False)
            return True
        if self.require_redacted and t["governance"]["redaction"] != "redacted":
            raw = [s["step_index"] for s in t["steps"] if s["governance"]["redaction"] != "redacted"]
            if raw:
                reason = f"unredacted steps {raw[:10]} refused: raw traffic never reaches the store"
                self._invalid(rec, reason, "Unredacted", now, withhold=True)
                return True
        self.counts.trajectories += 1
        for table, rows in rows_of_fields(t, received.header_json, received.step_json, rec, now).items():
            for row in rows:
                self._put(table, row)
        return True

    def _add_trajectory_model(self, rec: SourceRecord, now: datetime) -> None:
        event = self._decoded(rec, Trajectory, "a trajectory", now)
        if event is None:
            return
        if rec.key is not None and rec.key != event.trajectory_id:
            reason = f"record key {rec.key!r} is not its trajectory_id {event.trajectory_id!r}"
            self._invalid(rec, reason, "KeyMismatch", now, withhold=False)
            return
        raw = unredacted_steps(event) if self.require_redacted else []
        if raw:
            reason = f"unredacted steps {raw[:10]} refused: raw traffic never reaches the store"
            self._invalid(rec, reason, "Unredacted", now, withhold=True)
            return
        if self.sensitive_headers:
            steps = [scrub_headers(s, self.sensitive_headers) for s in event.steps]
            event = event.model_copy(update={"steps": steps})
        self.counts.trajectories += 1
        for table, rows in trajectory_rows(event, rec, now).items():
            for row in rows:
                self._put(table, row)

    def _add_dead_letter(self, rec: SourceRecord, now: datetime) -> None:
        if rec.value is None:
            return  # a tombstone on the dead-letter topic carries nothing to keep
        event = self._decoded(rec, DeadLetter, "a dead letter", now)
        if event is None:
            return
        self.counts.dead_letters += 1
        withhold = event.source_topic in self.topics.raw
        self._put("dead_letters", dead_letter_row(event, rec, withhold, now))

    def _add_ledger_entry(self, rec: SourceRecord, now: datetime) -> None:
        if rec.value is None:
            return  # the ledger is append-only: a tombstone there removes nothing
        try:
            entry = LedgerEntry.model_validate_json(rec.value)
        except ValidationError as err:
            row = invalid_row(rec, validation_reason(err), "ValidationError", now)
            row["trajectory_id"] = None  # the key is a proposal id, not a trajectory
            self.counts.invalid += 1
            self._put("dead_letters", row)
            return
        self.counts.ledger_entries += 1
        self._put("evolution_ledger", ledger_row(entry, rec, now))

    def _add_tombstone(self, rec: SourceRecord) -> None:
        self.counts.tombstones += 1
        if not self.apply_tombstones or rec.key is None:
            return
        tid = rec.key
        for rows in self.tables.values():
            stale = [k for k, r in rows.items() if r.get("trajectory_id") == tid]
            for k in stale:
                del rows[k]
            self.rows -= len(stale)
        self.deletes.add(tid)

    def arrow_tables(self) -> dict[str, pa.Table]:
        """One Arrow table per store table that has pending rows."""
        return {t: to_arrow(t, list(rows.values())) for t, rows in self.tables.items() if rows}

    def without_unstorable(self) -> PendingBatch:
        """The same records, those whose rows do not fit the store's types (an int beyond INTEGER, say)
        turned into dead letters. Slow (one conversion per record): only after a batch failed to convert.
        """
        clean = self._empty()
        now = datetime.now(UTC)
        for rec in self.sources:
            probe = self._empty()
            probe.add(rec, now)
            try:
                probe.arrow_tables()
            except (pa.ArrowException, OverflowError, TypeError, ValueError) as err:
                clean.records += 1
                clean.sources.append(rec)
                clean.offsets[(rec.topic, rec.partition)] = rec.offset + 1
                clean._invalid(
                    rec, f"does not fit the store schema: {err}", "SchemaMismatch", now, withhold=False
                )
            else:
                clean.add(rec, now)
        return clean

    def _empty(self) -> PendingBatch:
        return PendingBatch(self.topics, self.sensitive_headers, self.require_redacted, self.apply_tombstones)

    def trajectory_ids(self) -> set[str]:
        return {r["trajectory_id"] for r in self.tables["trajectory_versions"].values()}
