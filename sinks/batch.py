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
from operator import itemgetter
from typing import Any

import pyarrow as pa
from pydantic import ValidationError

from sinks.arrow_tables import gc_paused, to_arrow
from sinks.decode import Outcome, TrajectoryRules, decode_as, trajectory_outcome, validation_reason
from sinks.flatten import Row, SourceRecord, dead_letter_row, invalid_row, ledger_row
from sluice.events import DeadLetter
from sluice.evolution import LedgerEntry
from sluice.step_refs import is_step_record_key

# Primary key of each batched table (what a repeat replaces).
KEYS: dict[str, tuple[str, ...]] = {
    "trajectory_versions": ("event_id",),
    "steps": ("trajectory_id", "step_index"),
    "rewards": ("reward_id",),
    "dead_letters": ("event_id",),
    "evolution_ledger": ("entry_id",),
}
_KEY_OF = {t: itemgetter(*cols) for t, cols in KEYS.items()}  # a row's key: its value, or a tuple of several
# Tables where a newer version's row replaces an older one only when its content changed.
_VERSIONED = ("steps",)


@dataclass(frozen=True)
class BatchTopics:
    """Which consumed topic plays which role."""

    audited: str
    deadletter: str
    raw: frozenset[str] = frozenset()
    ledger: str | None = None  # the control plane's ledger (LedgerEntry records)


@dataclass
class RecordCounts:
    """Records of a batch by what they were: stored trajectory versions, stored step records (layout 2.0),
    dead letters read, records refused (invalid), tombstones, ledger entries."""

    trajectories: int = 0
    step_records: int = 0
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
    tables: dict[str, dict[Any, Row]] = field(default_factory=lambda: {t: {} for t in KEYS})
    deletes: set[str] = field(default_factory=set)
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    counts: RecordCounts = field(default_factory=RecordCounts)
    rows: int = 0
    records: int = 0
    first_at: float | None = None
    sources: list[SourceRecord] = field(default_factory=list)
    _rules: TrajectoryRules | None = field(default=None, init=False, repr=False)

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

    def rules(self) -> TrajectoryRules:
        """What deciding on a trajectory record depends on in this batch (built once: the settings it
        reads are fixed when the batch is made)."""
        if self._rules is None:
            self._rules = TrajectoryRules(self.sensitive_headers, self.require_redacted)
        return self._rules

    def _count(self, rec: SourceRecord) -> None:
        if self.first_at is None:
            self.first_at = time.monotonic()
        self.records += 1
        self.sources.append(rec)
        self.offsets[(rec.topic, rec.partition)] = rec.offset + 1

    def _add(self, rec: SourceRecord, now: datetime) -> None:
        self._count(rec)
        if rec.topic == self.topics.deadletter:
            self._add_dead_letter(rec, now)
        elif rec.topic == self.topics.ledger:
            self._add_ledger_entry(rec, now)
        elif rec.value is None:
            self._add_tombstone(rec)
        else:
            self._apply(trajectory_outcome(rec, self._rules or self.rules(), now))

    def _apply(self, outcome: Outcome) -> None:
        if outcome.stored and outcome.step_record:
            self.counts.step_records += 1
        elif outcome.stored:
            self.counts.trajectories += 1
        else:
            self.counts.invalid += 1
        for table, rows in outcome.rows.items():
            for row in rows:
                self._put(table, row)

    def _put(self, table: str, row: Row) -> None:
        key = _KEY_OF[table](row)
        old = self.tables[table].get(key)
        if old is None:
            self.rows += 1
        elif table in _VERSIONED and (
            old["record"] == row["record"] or old["since_version"] > row["since_version"]
        ):
            return
        self.tables[table][key] = row

    def _invalid(
        self, rec: SourceRecord, reason: str, error_type: str, now: datetime, withhold: bool
    ) -> None:
        self.counts.invalid += 1
        self._put("dead_letters", invalid_row(rec, reason, error_type, now, withhold_original=withhold))

    def _add_dead_letter(self, rec: SourceRecord, now: datetime) -> None:
        if rec.value is None:
            return  # a tombstone on the dead-letter topic carries nothing to keep
        event = decode_as(rec, DeadLetter, "a dead letter")
        if isinstance(event, tuple):
            self._invalid(rec, *event, now, withhold=False)
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
        if is_step_record_key(rec.key):
            return  # a withdrawn step record: the store keeps steps as the inline layout did
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
