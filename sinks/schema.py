"""DuckDB schema of the audited trajectory store: base tables in schema ``store``, user views in ``main``.

Base tables hold every version and every row with its identity as primary key, so re-delivered records
upsert instead of duplicating. The views users reach for first live in ``main``: ``trajectories``
(latest version of each), ``steps``, ``rewards``, ``training_set`` (the train topic's rule over the
latest version) and the audit tables. A tenant's query runs on a connection where the same names are
TEMP views filtered to its tenant (``tenant_view_ddl``); ``store`` is unreachable to it (see
``query_guard``). Usual recipe departed from: steps are stored once per (trajectory, step) rather than
per version, since history is immutable and versions differ only in late rewards. The full-JSON
``record`` columns are stored with zstd rather than DuckDB's automatic choice (FSST/dictionary): JSON
compresses far better that way and the checkpoint spends less time choosing (``python -m bench.sink``
reports the file size as ``db_mb``).

    sluice query "SELECT * FROM trajectories LIMIT 5"
"""

from __future__ import annotations

from collections.abc import Callable

STORE_SCHEMA_VERSION = "1"

GRADE_ORDER = ("deterministic", "approximate", "non_replayable")

TABLES: dict[str, str] = {
    "meta": """
        key VARCHAR PRIMARY KEY,
        value VARCHAR""",
    "trajectory_versions": """
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
        schema_version VARCHAR,
        record VARCHAR USING COMPRESSION zstd,
        ingested_at TIMESTAMPTZ""",
    "steps": """
        trajectory_id VARCHAR NOT NULL,
        step_index INTEGER NOT NULL,
        step_id VARCHAR,
        tenant VARCHAR NOT NULL,
        session_id VARCHAR,
        since_version INTEGER,
        created_at TIMESTAMPTZ,
        started_at TIMESTAMPTZ,
        operation VARCHAR,
        provider VARCHAR,
        request_model VARCHAR,
        response_model VARCHAR,
        model_version VARCHAR,
        backend VARCHAR,
        stream BOOLEAN,
        finish_reason VARCHAR,
        n_choices INTEGER,
        input_tokens BIGINT,
        output_tokens BIGINT,
        latency_ms DOUBLE,
        ttft_ms DOUBLE,
        cost_usd DOUBLE,
        prefix_message_count INTEGER,
        prefix_hash VARCHAR,
        error VARCHAR,
        status_code INTEGER,
        prompt_token_ids INTEGER[],
        prompt_token_prefix_len INTEGER,
        completion_token_ids INTEGER[],
        completion_logprobs DOUBLE[],
        harness_fingerprint VARCHAR,
        redaction VARCHAR,
        data_class VARCHAR,
        entity_count INTEGER,
        entity_types VARCHAR[],
        entities JSON,
        recognizer_version VARCHAR,
        redaction_config_version VARCHAR,
        cached_texts INTEGER,
        analysed_texts INTEGER,
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
    "eligibility_decisions": """
        event_id VARCHAR PRIMARY KEY,
        trajectory_id VARCHAR NOT NULL,
        version INTEGER NOT NULL,
        tenant VARCHAR NOT NULL,
        decision VARCHAR,
        reasons VARCHAR[],
        policy_version VARCHAR,
        retention_deadline TIMESTAMPTZ,
        replay_grade VARCHAR,
        replay_reasons VARCHAR[],
        decided_at TIMESTAMPTZ,
        ingested_at TIMESTAMPTZ""",
    "dead_letters": """
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
        ingested_at TIMESTAMPTZ""",
    "lineage": """
        record_id VARCHAR PRIMARY KEY,
        kind VARCHAR NOT NULL,
        trajectory_id VARCHAR,
        tenant VARCHAR,
        topic VARCHAR NOT NULL,
        partition INTEGER NOT NULL,
        "offset" BIGINT NOT NULL,
        ingested_at TIMESTAMPTZ""",
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
}

# Tables whose rows belong to a trajectory (erasure and tombstones delete from all of them).
TRAJECTORY_TABLES = (
    "trajectory_versions",
    "steps",
    "rewards",
    "eligibility_decisions",
    "dead_letters",
    "lineage",
)

_LATEST = """
    SELECT trajectory_id, version, tenant, session_id, status, reward, rewarded, reward_count,
           eligibility, eligibility_reasons, policy_version, replay_grade, replay_reasons,
           step_count, input_tokens, output_tokens, input_tokens + output_tokens AS total_tokens, cost_usd,
           first_step_at, ended_at, emitted_at,
           epoch(ended_at) - epoch(first_step_at) AS duration_s,
           data_class, consent_training, retention_deadline, models, model_versions, subject_ids,
           count(*) OVER (PARTITION BY trajectory_id) AS versions
    FROM store.trajectory_versions WHERE {cond}
    QUALIFY row_number() OVER (PARTITION BY trajectory_id ORDER BY version DESC) = 1"""

# Message JSON is read out of the step record at query time rather than stored twice. Records are stored
# as VARCHAR (a JSON column would re-parse every record on insert, 4x the cost of the whole insert).
_STEPS = """
    SELECT * EXCLUDE (entity_count, entity_types, entities, recognizer_version, redaction_config_version,
                      cached_texts, analysed_texts, content_hash, record, ingested_at),
           json_extract(record, '$.observation.messages') AS new_messages,
           json_extract(record, '$.action.choices[0].message') AS completion,
           json_extract(record, '$.action.choices[0].message.tool_calls') AS tool_calls,
           json_extract(record, '$.action_result.tool_results') AS tool_results,
           entity_count, record::JSON AS record, ingested_at
    FROM store.steps WHERE {cond}"""

# Redaction reports are 1:1 with steps, so they are stored as columns of store.steps.
_REDACTION = """
    SELECT trajectory_id, step_index, tenant, since_version, redaction, entity_count, entity_types, entities,
           recognizer_version, redaction_config_version AS config_version, cached_texts, analysed_texts,
           ingested_at
    FROM store.steps WHERE entities IS NOT NULL AND {cond}"""


def _grades_ok(min_train_grade: str) -> str:
    ok = GRADE_ORDER[: GRADE_ORDER.index(min_train_grade) + 1]
    return ", ".join(f"'{g}'" for g in ok)


def _training_set(cond: str, grade: str) -> str:
    """The train topic's rule (governance.eligibility.train_gate) over the latest versions."""
    return (
        f"SELECT * FROM ({_LATEST.format(cond=cond)}) "
        "WHERE eligibility = 'train' AND rewarded AND reward IS NOT NULL "
        f"AND replay_grade IN ({_grades_ok(grade)})"
    )


def _simple(table: str) -> Callable[[str, str], str]:
    return lambda cond, _grade: f"SELECT * FROM store.{table} WHERE {cond}"


# View name -> SQL template of (row condition: 'TRUE' or a tenant filter, min replay grade for training).
VIEWS: dict[str, Callable[[str, str], str]] = {
    "trajectories": lambda cond, _grade: _LATEST.format(cond=cond),
    "training_set": _training_set,
    "trajectory_versions": lambda cond, _grade: (
        f"SELECT * REPLACE (record::JSON AS record) FROM store.trajectory_versions WHERE {cond}"
    ),
    "steps": lambda cond, _grade: _STEPS.format(cond=cond),
    "rewards": _simple("rewards"),
    "redaction_reports": lambda cond, _grade: _REDACTION.format(cond=cond),
    "eligibility_decisions": _simple("eligibility_decisions"),
    "dead_letters": _simple("dead_letters"),
    "lineage": _simple("lineage"),
    "erasures": _simple("erasures"),
    "sink_offsets": _simple("offsets"),
}

# What a tenant's query may name: each resolves to a TEMP view filtered to that tenant.
TENANT_VIEWS = (
    "trajectories",
    "training_set",
    "trajectory_versions",
    "steps",
    "rewards",
    "redaction_reports",
    "eligibility_decisions",
)


def quote_literal(value: str) -> str:
    """A SQL string literal (single quotes doubled)."""
    return "'" + value.replace("'", "''") + "'"


def schema_ddl(min_train_grade: str = "approximate") -> list[str]:
    """Statements that create the base tables (if missing) and (re)create the views."""
    stmts = ["CREATE SCHEMA IF NOT EXISTS store"]
    stmts += [f"CREATE TABLE IF NOT EXISTS store.{name} ({cols})" for name, cols in TABLES.items()]
    stmts += [
        f"CREATE OR REPLACE VIEW main.{name} AS {sql('TRUE', min_train_grade)}" for name, sql in VIEWS.items()
    ]
    stmts.append(
        "INSERT INTO store.meta VALUES ('store_schema_version', "
        f"{quote_literal(STORE_SCHEMA_VERSION)}) ON CONFLICT DO NOTHING"
    )
    return stmts


def tenant_view_ddl(tenant: str, min_train_grade: str = "approximate") -> list[str]:
    """TEMP views that shadow the user-facing names with the tenant's rows only (one connection)."""
    cond = f"tenant = {quote_literal(tenant)}"
    return [
        f"CREATE OR REPLACE TEMP VIEW {name} AS {VIEWS[name](cond, min_train_grade)}" for name in TENANT_VIEWS
    ]
