"""DuckDB schema of the audited trajectory store: base tables in schema ``store``, and their migrations.

Base tables hold every version and every row with its identity as primary key, so re-delivered records
upsert instead of duplicating; users query the views over them (``sinks.views``). Usual recipe departed
from, so that the sink writes less (``python -m bench.sink`` measures the write path):
- steps are stored once per (trajectory, step) rather than per version, since history is immutable and
  versions differ only in late rewards;
- a step stores the columns queries filter on plus its full JSON ``record``; the other fields (token
  ids, logprobs, messages, fingerprints, redaction details) are read from the record at query time;
- eligibility decisions, the join stage's train decision (``train_blockers``) and lineage (topic,
  partition, offset) are columns of the trajectory-version and dead-letter rows they describe, not
  tables with indexes of their own;
- ``record`` columns are stored with zstd rather than DuckDB's automatic choice (FSST/dictionary):
  JSON compresses far better that way and the checkpoint spends less time choosing.
A store written at an older ``STORE_SCHEMA_VERSION`` is migrated in place when the sink opens it.

    sluice query "SELECT * FROM trajectories LIMIT 5"
"""

from __future__ import annotations

from sinks.exceptions import SinkError
from sinks.views import VIEWS, quote_literal
from sluice.events import GRADE_RANK

STORE_SCHEMA_VERSION = "4"

# Lineage columns: where the sink read a stored trajectory version or dead letter.
_LINEAGE_COLUMNS = (("record_topic", "VARCHAR"), ("record_partition", "INTEGER"), ("record_offset", "BIGINT"))
_LINEAGE_DDL = ", ".join(f"{name} {sql_type}" for name, sql_type in _LINEAGE_COLUMNS)

TABLES: dict[str, str] = {
    "meta": """
        key VARCHAR PRIMARY KEY,
        value VARCHAR""",
    "trajectory_versions": f"""
        event_id VARCHAR PRIMARY KEY,
        trajectory_id VARCHAR NOT NULL,
        version INTEGER NOT NULL,
        tenant VARCHAR NOT NULL,
        session_id VARCHAR,
        status VARCHAR,
        rewarded BOOLEAN,
        reward DOUBLE,
        reward_count INTEGER,
        step_count INTEGER,
        input_tokens BIGINT,
        output_tokens BIGINT,
        cost_usd DOUBLE,
        models VARCHAR[],
        model_versions VARCHAR[],
        first_step_at TIMESTAMPTZ,
        ended_at TIMESTAMPTZ,
        emitted_at TIMESTAMPTZ,
        created_at TIMESTAMPTZ,
        data_class VARCHAR,
        consent_training BOOLEAN,
        retention_deadline TIMESTAMPTZ,
        subject_ids VARCHAR[],
        redaction VARCHAR,
        eligibility VARCHAR,
        eligibility_reasons VARCHAR[],
        policy_version VARCHAR,
        replay_grade VARCHAR,
        replay_reasons VARCHAR[],
        train_blockers VARCHAR[],
        schema_version VARCHAR,
        record VARCHAR USING COMPRESSION zstd,
        ingested_at TIMESTAMPTZ,
        {_LINEAGE_DDL}""",
    "steps": """
        trajectory_id VARCHAR NOT NULL,
        step_index INTEGER NOT NULL,
        tenant VARCHAR NOT NULL,
        session_id VARCHAR,
        since_version INTEGER,
        created_at TIMESTAMPTZ,
        request_model VARCHAR,
        response_model VARCHAR,
        model_version VARCHAR,
        finish_reason VARCHAR,
        input_tokens BIGINT,
        output_tokens BIGINT,
        latency_ms DOUBLE,
        ttft_ms DOUBLE,
        cost_usd DOUBLE,
        error VARCHAR,
        status_code INTEGER,
        redaction VARCHAR,
        data_class VARCHAR,
        entity_count INTEGER,
        entities JSON,
        content_hash VARCHAR,
        record VARCHAR USING COMPRESSION zstd,
        ingested_at TIMESTAMPTZ,
        PRIMARY KEY (trajectory_id, step_index)""",
    "rewards": """
        reward_id VARCHAR PRIMARY KEY,
        trajectory_id VARCHAR NOT NULL,
        tenant VARCHAR NOT NULL,
        name VARCHAR,
        kind VARCHAR,
        value DOUBLE,
        critique VARCHAR,
        source VARCHAR,
        step_index INTEGER,
        created_at TIMESTAMPTZ,
        first_version INTEGER,
        ingested_at TIMESTAMPTZ""",
    "dead_letters": f"""
        event_id VARCHAR PRIMARY KEY,
        trajectory_id VARCHAR,
        stage VARCHAR,
        reason VARCHAR,
        error_type VARCHAR,
        source_topic VARCHAR,
        source_partition INTEGER,
        source_offset BIGINT,
        key VARCHAR,
        original_b64 VARCHAR,
        original_sha256 VARCHAR,
        original_bytes BIGINT,
        original_withheld BOOLEAN,
        created_at TIMESTAMPTZ,
        ingested_at TIMESTAMPTZ,
        {_LINEAGE_DDL}""",
    "offsets": """
        group_id VARCHAR NOT NULL,
        topic VARCHAR NOT NULL,
        partition INTEGER NOT NULL,
        next_offset BIGINT NOT NULL,
        updated_at TIMESTAMPTZ,
        PRIMARY KEY (group_id, topic, partition)""",
    "erasures": """
        erasure_id VARCHAR PRIMARY KEY,
        scope VARCHAR NOT NULL,
        target VARCHAR NOT NULL,
        tenant_scope VARCHAR,
        requested_by VARCHAR,
        reason VARCHAR,
        requested_at TIMESTAMPTZ,
        completed_at TIMESTAMPTZ,
        status VARCHAR,
        trajectories INTEGER,
        rows_deleted JSON,
        tombstones INTEGER,
        error VARCHAR""",
    "erased_trajectories": """
        trajectory_id VARCHAR PRIMARY KEY,
        erasure_id VARCHAR,
        erased_at TIMESTAMPTZ""",
    # One row per LedgerEntry (every field a column; evidence and diff as JSON), with where it was read.
    "evolution_ledger": f"""
        entry_id VARCHAR PRIMARY KEY,
        event_type VARCHAR,
        proposal_id VARCHAR NOT NULL,
        kind VARCHAR NOT NULL,
        surface VARCHAR NOT NULL,
        tenant VARCHAR NOT NULL,
        task_id VARCHAR,
        gate VARCHAR,
        passed BOOLEAN,
        decision VARCHAR,
        summary VARCHAR,
        evidence JSON,
        diff JSON,
        overlay_id VARCHAR,
        previous_overlay_id VARCHAR,
        policy_version VARCHAR,
        actor VARCHAR,
        created_at TIMESTAMPTZ,
        ingested_at TIMESTAMPTZ,
        {_LINEAGE_DDL}""",
}

# Columns DuckDB computes as it inserts a row (SQL over the incoming row ``i``), so the sink's Python
# thread never does: the step's content digest, which an upsert compares to tell a changed step.
COMPUTED_COLUMNS: dict[str, dict[str, str]] = {"steps": {"content_hash": 'sha1(i."record")'}}

# Tables whose rows belong to a trajectory (erasure and tombstones delete from all of them).
TRAJECTORY_TABLES = ("trajectory_versions", "steps", "rewards", "dead_letters")


def _grade_rank(grade_sql: str) -> str:
    return f"CASE {grade_sql} " + " ".join(f"WHEN '{g}' THEN {r}" for g, r in GRADE_RANK.items()) + " END"


def _blocker(condition: str, reason_sql: str) -> str:
    return f"CASE WHEN {condition} THEN [{reason_sql}] ELSE []::VARCHAR[] END"


# The grade a store's training_set view was built with before the stages carried their decision (the
# sink's default when none was recorded).
_STORED_MIN_GRADE = "coalesce((SELECT value FROM store.meta WHERE key = 'min_train_grade'), 'approximate')"

# The train decision of a row stored before the stages carried theirs: the rule that view applied, taken
# once, as the blockers governance's train gate names.
_FILL_TRAIN_BLOCKERS = (
    "UPDATE store.trajectory_versions SET train_blockers = list_concat("
    + _blocker("eligibility IS DISTINCT FROM 'train'", "'eligibility:' || coalesce(eligibility, 'undecided')")
    + ", "
    + _blocker("rewarded IS NOT TRUE OR reward IS NULL", "'unrewarded'")
    + ", "
    + _blocker(
        f"({_grade_rank('replay_grade')} >= {_grade_rank(_STORED_MIN_GRADE)}) IS NOT TRUE",
        f"'replay_grade:' || coalesce(replay_grade, 'ungraded') || '<' || {_STORED_MIN_GRADE}",
    )
    + ")"
)

# What brings a store written at an older schema version to the next one, keyed by the older version.
MIGRATIONS: dict[str, tuple[str, ...]] = {
    # 2: step fields in STEP_RECORD_FIELDS are read from the record; lineage and eligibility decisions
    # become columns of the rows they describe (each was a second table with an index of its own).
    "1": (
        *(
            f"ALTER TABLE store.steps DROP COLUMN {c}"
            for c in (
                "step_id", "started_at", "operation", "provider", "backend", "stream", "n_choices",
                "prefix_message_count", "prefix_hash", "prompt_token_ids", "prompt_token_prefix_len",
                "completion_token_ids", "completion_logprobs", "harness_fingerprint", "entity_types",
                "recognizer_version", "redaction_config_version", "cached_texts", "analysed_texts",
            )
        ),
        *(
            f"ALTER TABLE store.{t} ADD COLUMN {c} {sql_type}"
            for t in ("trajectory_versions", "dead_letters")
            for c, sql_type in _LINEAGE_COLUMNS
        ),
        *(
            f"UPDATE store.{t} AS r SET record_topic = l.topic, record_partition = l.partition, "
            f'record_offset = l."offset" FROM store.lineage AS l WHERE l.record_id = r.event_id'
            for t in ("trajectory_versions", "dead_letters")
        ),
        "DROP TABLE store.lineage",
        "DROP TABLE store.eligibility_decisions",
    ),
    # 3: the evolution ledger (store.evolution_ledger), created by CREATE TABLE IF NOT EXISTS above;
    # no stored row changes.
    "2": (),
    # 4: the join stage's train decision is stored as it came (train_blockers) and training_set filters
    # on it; stored rows get the decision the view's rule gave them, and the sink's grade is dropped.
    "3": (
        "ALTER TABLE store.trajectory_versions ADD COLUMN train_blockers VARCHAR[]",
        _FILL_TRAIN_BLOCKERS,
        "DELETE FROM store.meta WHERE key = 'min_train_grade'",
    ),
}  # fmt: skip


def migration_ddl(stored_version: str) -> list[str]:
    """Statements that bring a store at ``stored_version`` to ``STORE_SCHEMA_VERSION``."""
    if int(stored_version) > int(STORE_SCHEMA_VERSION):
        raise SinkError(
            f"the store has schema version {stored_version}, newer than this Sluice's "
            f"{STORE_SCHEMA_VERSION}: upgrade Sluice to open it"
        )
    stmts: list[str] = []
    for version in range(int(stored_version), int(STORE_SCHEMA_VERSION)):
        stmts += MIGRATIONS[str(version)]
    return stmts


def schema_ddl(stored_version: str | None = None) -> list[str]:
    """Statements that create the base tables (if missing), migrate a store written at
    ``stored_version`` (None: a new store), (re)create the views and record the schema version."""
    stmts = ["CREATE SCHEMA IF NOT EXISTS store"]
    stmts += [f"CREATE TABLE IF NOT EXISTS store.{name} ({cols})" for name, cols in TABLES.items()]
    stmts += migration_ddl(stored_version or STORE_SCHEMA_VERSION)
    stmts += [f"CREATE OR REPLACE VIEW main.{name} AS {sql('TRUE')}" for name, sql in VIEWS.items()]
    stmts.append(
        "INSERT OR REPLACE INTO store.meta VALUES ('store_schema_version', "
        f"{quote_literal(STORE_SCHEMA_VERSION)})"
    )
    return stmts
