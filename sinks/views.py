"""The views users query, over the store's base tables (``sinks.schema``): SQL templates, no DuckDB.

``trajectories`` is the latest version of each trajectory, ``training_set`` those of them the join
stage let onto the train topic (its decision, carried by the record as ``train_blockers``, is empty),
``steps`` and ``redaction_reports`` the stored step columns plus fields read from the step record at
query time (``STEP_RECORD_FIELDS``), ``eligibility_decisions`` and ``lineage`` columns of the rows they
describe. ``evolution_ledger`` is the control plane's ledger, ``overlay_trajectories`` each
trajectory served under an overlay assignment with its arm and outcome, ``overlay_outcomes`` their
counts and rewards per tenant, task, overlay and arm, ``policy_lineage`` the trajectory versions each model
policy version trained on, ``policy_rewards`` each tenant's trajectories and mean reward per policy version
that served them, ``tenant_policies`` per tenant the version it is served now (from the ledger), that
version's lineage and its reward by version, ``erasure_rebuilds`` per erasure the versions it found
tainted and each version rebuilt in their place with the gates' newest word on it. Each template takes a row condition, so a tenant's connection gets the same names as
TEMP views filtered to its rows (``tenant_view_ddl``).

    sluice query "SELECT * FROM steps LIMIT 5"
"""

from __future__ import annotations

from collections.abc import Callable

_LATEST = """
    SELECT trajectory_id, version, tenant, session_id, status, reward, rewarded, reward_count,
           eligibility, eligibility_reasons, policy_version, replay_grade, replay_reasons, train_blockers,
           step_count, input_tokens, output_tokens, input_tokens + output_tokens AS total_tokens, cost_usd,
           first_step_at, ended_at, emitted_at,
           epoch(ended_at) - epoch(first_step_at) AS duration_s,
           data_class, consent_training, retention_deadline, models, model_versions, subject_ids,
           count(*) OVER (PARTITION BY trajectory_id) AS versions
    FROM store.trajectory_versions WHERE {cond}
    QUALIFY row_number() OVER (PARTITION BY trajectory_id ORDER BY version DESC) = 1"""


def _text(path: str) -> str:
    return f"json_extract_string(record, '{path}')"


def _typed(path: str, sql_type: str) -> str:
    return f"TRY_CAST(json_extract_string(record, '{path}') AS {sql_type})"


def _json(path: str) -> str:
    return f"json_extract(record, '{path}')"


def _list(path: str, sql_type: str) -> str:
    return f"TRY_CAST({_json(path)} AS {sql_type})"


# Step fields that are read out of the step record at query time rather than stored twice. A stored
# column costs every write (WAL or row group, checkpoint): these are the ones queries rarely filter on,
# plus token ids and logprobs, which real completions make the largest part of a step and which DuckDB
# writes slowest as list columns. TRY_CAST: one odd record never breaks a query; DuckDB drops the
# extractions a query does not select.
STEP_RECORD_FIELDS: dict[str, str] = {
    "step_id": _text("$.event_id"),
    "started_at": _typed("$.metadata.started_at", "TIMESTAMPTZ"),
    "operation": _text("$.metadata.gen_ai.operation_name"),
    "provider": _text("$.metadata.gen_ai.provider_name"),
    "backend": _text("$.metadata.backend"),
    "stream": _typed("$.metadata.stream", "BOOLEAN"),
    "n_choices": "json_array_length(record, '$.action.choices')",
    "prefix_message_count": _typed("$.observation.prefix_message_count", "INTEGER"),
    "prefix_hash": _text("$.observation.prefix_hash"),
    "prompt_token_ids": _list("$.action.prompt_token_ids", "INTEGER[]"),
    "prompt_token_prefix_len": _typed("$.action.prompt_token_prefix_len", "INTEGER"),
    "completion_token_ids": _list("$.action.choices[0].token_ids", "INTEGER[]"),
    "completion_logprobs": _list("$.action.choices[0].logprobs", "DOUBLE[]"),
    "harness_fingerprint": _text("$.metadata.harness_fingerprint"),
    "task_id": _text("$.metadata.task_id"),
    "overlay_id": _text("$.metadata.overlay_id"),
    "overlay_arm": _text("$.metadata.overlay_arm"),
    "new_messages": _json("$.observation.messages"),
    "completion": _json("$.action.choices[0].message"),
    "tool_calls": _json("$.action.choices[0].message.tool_calls"),
    "tool_results": _json("$.action_result.tool_results"),
    "recognizer_version": _text("$.governance.redaction_report.recognizer_version"),
    "config_version": _text("$.governance.redaction_report.config_version"),
    "cached_texts": _typed("$.governance.redaction_report.cached_texts", "INTEGER"),
    "analysed_texts": _typed("$.governance.redaction_report.analysed_texts", "INTEGER"),
    "entity_types": "json_keys(entities)",
    # Records are stored as VARCHAR: a JSON column would re-parse every record on insert (4x the insert).
    "record": "record::JSON",
}

_STEPS_VIEW = (
    "trajectory_id", "step_index", "step_id", "tenant", "session_id", "since_version", "created_at",
    "started_at", "operation", "provider", "request_model", "response_model", "model_version", "backend",
    "stream", "finish_reason", "n_choices", "input_tokens", "output_tokens", "latency_ms", "ttft_ms",
    "cost_usd", "prefix_message_count", "prefix_hash", "error", "status_code", "prompt_token_ids",
    "prompt_token_prefix_len", "completion_token_ids", "completion_logprobs", "harness_fingerprint",
    "task_id", "overlay_id", "overlay_arm", "redaction", "data_class", "new_messages", "completion",
    "tool_calls", "tool_results", "entity_count",
    "record", "ingested_at",
)  # fmt: skip

# Redaction reports are 1:1 with steps, so they live in store.steps (counts as columns, details in the record).
_REDACTION_VIEW = (
    "trajectory_id", "step_index", "tenant", "since_version", "redaction", "entity_count", "entity_types",
    "entities", "recognizer_version", "config_version", "cached_texts", "analysed_texts", "ingested_at",
)  # fmt: skip


def _step_select(columns: tuple[str, ...]) -> str:
    return ", ".join(f"{STEP_RECORD_FIELDS[c]} AS {c}" if c in STEP_RECORD_FIELDS else c for c in columns)


_STEPS = f"SELECT {_step_select(_STEPS_VIEW)} FROM store.steps WHERE {{cond}}"
_REDACTION = (
    f"SELECT {_step_select(_REDACTION_VIEW)} FROM store.steps WHERE entities IS NOT NULL AND {{cond}}"
)

# Eligibility decisions are 1:1 with trajectory versions: their columns live in store.trajectory_versions.
_ELIGIBILITY = """
    SELECT event_id, trajectory_id, version, tenant, eligibility AS decision, eligibility_reasons AS reasons,
           policy_version,
           TRY_CAST(json_extract_string(record, '$.governance.eligibility.retention_deadline') AS TIMESTAMPTZ)
               AS retention_deadline,
           replay_grade, replay_reasons, train_blockers, emitted_at AS decided_at, ingested_at
    FROM store.trajectory_versions WHERE eligibility IS NOT NULL AND {cond}"""

# Lineage is 1:1 with consumed records, each stored as a trajectory version or a dead letter with the
# topic, partition and offset it was read from; a step's version is its since_version.
_LINEAGE = """
    SELECT event_id AS record_id, 'trajectory' AS kind, trajectory_id, tenant, record_topic AS topic,
           record_partition AS "partition", record_offset AS "offset", ingested_at
    FROM store.trajectory_versions WHERE {cond}
    UNION ALL
    SELECT event_id, CASE WHEN stage = 'sink' THEN 'invalid' ELSE 'dead_letter' END, trajectory_id, NULL,
           record_topic, record_partition, record_offset, ingested_at
    FROM store.dead_letters WHERE {cond}"""


# Trajectories served under an overlay assignment, attributed to the arm and overlay of their first step
# (the arm the trajectory was routed to when it began), with the outcome of their latest version.
_OVERLAY_TRAJECTORIES = f"""
    SELECT t.trajectory_id, t.tenant, s.task_id, s.overlay_id, s.overlay_arm, t.version, t.status,
           t.rewarded, t.reward, t.policy_version, t.first_step_at, t.ended_at
    FROM (SELECT trajectory_id, tenant, version, status, rewarded, reward, policy_version, first_step_at,
                 ended_at
          FROM store.trajectory_versions WHERE {{cond}}
          QUALIFY row_number() OVER (PARTITION BY trajectory_id ORDER BY version DESC) = 1) AS t
    JOIN (SELECT * FROM (
              SELECT trajectory_id, {STEP_RECORD_FIELDS["task_id"]} AS task_id,
                     {STEP_RECORD_FIELDS["overlay_id"]} AS overlay_id,
                     {STEP_RECORD_FIELDS["overlay_arm"]} AS overlay_arm
              FROM store.steps WHERE {{cond}}
              QUALIFY row_number() OVER (PARTITION BY trajectory_id ORDER BY step_index) = 1)
          WHERE overlay_arm IS NOT NULL) AS s
    USING (trajectory_id)"""

# Per tenant, task, overlay and arm: how its trajectories did (what a canary compares).
_OVERLAY_OUTCOMES = """
    SELECT tenant, task_id, overlay_id, overlay_arm, count(*) AS trajectories,
           count_if(rewarded) AS rewarded, avg(reward) FILTER (WHERE rewarded) AS mean_reward,
           stddev_samp(reward) FILTER (WHERE rewarded) AS reward_stddev,
           sum(reward) FILTER (WHERE rewarded) AS reward_sum,
           min(first_step_at) AS first_step_at, max(ended_at) AS last_ended_at
    FROM ({trajectories}) GROUP BY tenant, task_id, overlay_id, overlay_arm"""


# One row per (model policy version, trajectory version it trained on), from the weights proposals the
# trainer records in the ledger before a version serves anything. A version's whole data is its rows
# plus its parent's, recursively (``parent``). Filtered by the trajectory's tenant: a tenant sees which
# versions its data trained, never another tenant's trajectories.
_POLICY_LINEAGE = """
    SELECT * FROM (
        SELECT l.policy_version, l.parent, l.scope, l.promotion, item.trajectory_id,
               item.version AS trajectory_version, item.tenant, item.samples, item.reward,
               item.reward_sources, l.proposal_id, l.created_at
        FROM (SELECT policy_version, proposal_id, created_at,
                     diff ->> '$.proposal.lineage.parent' AS parent,
                     diff ->> '$.proposal.lineage.scope' AS scope,
                     diff ->> '$.proposal.lineage.promotion' AS promotion,
                     from_json(diff -> '$.proposal.lineage.items', '[{{"trajectory_id": "VARCHAR",
                         "version": "BIGINT", "tenant": "VARCHAR", "samples": "BIGINT", "reward": "DOUBLE",
                         "reward_sources": "VARCHAR[]"}}]') AS items
              FROM store.evolution_ledger
              WHERE kind = 'proposal' AND surface = 'weights' AND policy_version IS NOT NULL) AS l,
             unnest(l.items) AS u(item))
    WHERE {cond}"""


# Per erasure that reached the weights: the versions it found tainted (its ``erased`` decisions in the
# ledger), each version rebuilt in their place (a weights proposal whose lineage names them in
# ``rebuild_of``), what it was rebuilt from, and the newest ledger entry about it (the gates' outcome:
# a gate result, a promotion, a refusal; none yet while it waits). The rest of an erasure's receipt.
_ERASURE_REBUILDS = """
    WITH tainted AS (
             SELECT evidence ->> '$.erasure_id' AS erasure_id, list(DISTINCT policy_version) AS tainted_versions
             FROM store.evolution_ledger
             WHERE surface = 'weights' AND kind = 'decision' AND decision = 'erased' AND policy_version IS NOT NULL
             GROUP BY 1),
         rebuilt AS (
             SELECT policy_version AS rebuilt_version, proposal_id, tenant, created_at AS proposed_at,
                    diff ->> '$.proposal.lineage.parent' AS rebuilt_from,
                    from_json(diff -> '$.proposal.lineage.rebuild_of', '["VARCHAR"]') AS rebuild_of
             FROM store.evolution_ledger
             WHERE kind = 'proposal' AND surface = 'weights'
               AND json_array_length(diff -> '$.proposal.lineage.rebuild_of') > 0),
         outcome AS (
             SELECT proposal_id, kind AS outcome_kind, gate AS outcome_gate, passed AS outcome_passed,
                    decision AS outcome_decision, summary AS outcome_summary, created_at AS outcome_at
             FROM store.evolution_ledger
             WHERE surface = 'weights' AND kind <> 'proposal'
             QUALIFY row_number() OVER (PARTITION BY proposal_id ORDER BY created_at DESC) = 1)
    SELECT * FROM (
        SELECT t.erasure_id, t.tainted_versions, r.rebuilt_version, r.rebuilt_from, r.rebuild_of, r.tenant,
               r.proposal_id, r.proposed_at, o.* EXCLUDE (proposal_id)
        FROM tainted t
        JOIN rebuilt r ON len(list_intersect(r.rebuild_of, t.tainted_versions)) > 0
        LEFT JOIN outcome o USING (proposal_id))
    WHERE {cond}"""


# Per tenant and the policy version that served its trajectories (the model version of each trajectory's
# first step): how many, how many rewarded, their mean reward: what each version earned for that tenant.
_POLICY_REWARDS = """
    SELECT t.tenant, s.model_version AS policy_version, count(*) AS trajectories,
           count_if(t.rewarded) AS rewarded, avg(t.reward) FILTER (WHERE t.rewarded) AS mean_reward,
           min(t.first_step_at) AS first_served, max(t.ended_at) AS last_ended_at
    FROM (SELECT trajectory_id, tenant, rewarded, reward, first_step_at, ended_at
          FROM store.trajectory_versions WHERE {cond}
          QUALIFY row_number() OVER (PARTITION BY trajectory_id ORDER BY version DESC) = 1) AS t
    JOIN (SELECT trajectory_id, model_version FROM store.steps WHERE {cond} AND model_version IS NOT NULL
          QUALIFY row_number() OVER (PARTITION BY trajectory_id ORDER BY step_index) = 1) AS s
    USING (trajectory_id)
    GROUP BY t.tenant, s.model_version"""

# The model policy each scope's assignment serves, read back from the ledger: every entry that changed an
# assignment carries it whole (``diff.after``), and a direct (ungated) version names itself. The newest
# such entry of a tenant's whole scope (no task) wins; ``*`` is the shared scope every tenant falls back on.
_SCOPE_POLICY = """
    SELECT tenant AS scope_tenant, policy, proposal_id, created_at AS since
    FROM (SELECT tenant, proposal_id, created_at,
                 CASE WHEN json_type(diff -> '$.after') = 'OBJECT' THEN diff ->> '$.after.active_policy'
                      ELSE policy_version END AS policy
          FROM store.evolution_ledger
          WHERE task_id IS NULL AND (json_type(diff -> '$.after') = 'OBJECT'
                                     OR (kind = 'promotion' AND decision = 'ungated'))
          QUALIFY row_number() OVER (PARTITION BY tenant ORDER BY created_at DESC) = 1)"""

# Per tenant: the version it is served now (its own scope's, else the shared scope's, else the servers'
# default: NULL), where that came from, the served version's lineage as this tenant's share of it (its
# trajectories; how many tenants in all, never their names) and the tenant's reward by version. The proxy
# routes by the same rule (``pipeline/proxy/control/overlay_routing.py``: the narrowest assignment naming a policy).
_TENANT_POLICIES = f"""
    SELECT * FROM (
        WITH scopes AS ({_SCOPE_POLICY}),
             rewards AS ({_POLICY_REWARDS.format(cond="TRUE")}),
             lineage AS (SELECT policy_version, any_value(parent) AS parent, any_value(scope) AS scope,
                                count(DISTINCT tenant) AS tenants, list(tenant) AS item_tenants
                         FROM ({_POLICY_LINEAGE.format(cond="TRUE")}) GROUP BY policy_version),
             tenants AS (SELECT DISTINCT tenant FROM store.trajectory_versions
                         UNION SELECT DISTINCT tenant FROM store.evolution_ledger WHERE tenant <> '*')
        SELECT t.tenant,
               coalesce(o.policy, s.policy) AS served_version,
               CASE WHEN o.policy IS NOT NULL THEN 'own' WHEN s.policy IS NOT NULL THEN 'shared'
                    ELSE 'default' END AS served_by,
               CASE WHEN o.policy IS NOT NULL THEN o.since ELSE s.since END AS served_since,
               CASE WHEN o.policy IS NOT NULL THEN o.proposal_id ELSE s.proposal_id END AS proposal_id,
               l.scope AS lineage_scope, l.parent AS lineage_parent,
               len(list_filter(l.item_tenants, lambda x: x = t.tenant)) AS lineage_trajectories,
               coalesce(l.tenants, 0) AS lineage_tenants,
               (SELECT list({{'policy_version': r.policy_version, 'trajectories': r.trajectories,
                              'rewarded': r.rewarded, 'mean_reward': r.mean_reward}}
                             ORDER BY r.first_served, r.policy_version)
                FROM rewards r WHERE r.tenant = t.tenant) AS reward_by_version
        FROM tenants t
        LEFT JOIN scopes o ON o.scope_tenant = t.tenant AND o.policy IS NOT NULL
        LEFT JOIN scopes s ON s.scope_tenant = '*' AND s.policy IS NOT NULL
        LEFT JOIN lineage l ON l.policy_version = coalesce(o.policy, s.policy))
    WHERE @cond"""


def _training_set(cond: str) -> str:
    """The latest versions the join stage sent to the train topic: the decision it carried, not a rule
    taken again (a version without one, undecided, is not in it)."""
    return f"SELECT * FROM ({_LATEST.format(cond=cond)}) WHERE len(train_blockers) = 0"


def _simple(table: str) -> Callable[[str], str]:
    return lambda cond: f"SELECT * FROM store.{table} WHERE {cond}"


# View name -> SQL template of the row condition ('TRUE' or a tenant filter).
VIEWS: dict[str, Callable[[str], str]] = {
    "trajectories": lambda cond: _LATEST.format(cond=cond),
    "training_set": _training_set,
    "trajectory_versions": lambda cond: (
        f"SELECT * REPLACE (record::JSON AS record) FROM store.trajectory_versions WHERE {cond}"
    ),
    "steps": lambda cond: _STEPS.format(cond=cond),
    "rewards": _simple("rewards"),
    "redaction_reports": lambda cond: _REDACTION.format(cond=cond),
    "eligibility_decisions": lambda cond: _ELIGIBILITY.format(cond=cond),
    "dead_letters": _simple("dead_letters"),
    "lineage": lambda cond: _LINEAGE.format(cond=cond),
    "erasures": _simple("erasures"),
    "erased_trajectories": _simple("erased_trajectories"),
    "sink_offsets": _simple("offsets"),
    "evolution_ledger": _simple("evolution_ledger"),
    "policy_lineage": lambda cond: _POLICY_LINEAGE.format(cond=cond),
    "erasure_rebuilds": lambda cond: _ERASURE_REBUILDS.format(cond=cond),
    "overlay_trajectories": lambda cond: _OVERLAY_TRAJECTORIES.format(cond=cond),
    "policy_rewards": lambda cond: _POLICY_REWARDS.format(cond=cond),
    "tenant_policies": lambda cond: _TENANT_POLICIES.replace("@cond", cond),
    "overlay_outcomes": lambda cond: _OVERLAY_OUTCOMES.format(
        trajectories=_OVERLAY_TRAJECTORIES.format(cond=cond)
    ),
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
    "evolution_ledger",
    "policy_lineage",
    "overlay_trajectories",
    "overlay_outcomes",
    "policy_rewards",
    "tenant_policies",
)


def quote_literal(value: str) -> str:
    """A SQL string literal (single quotes doubled)."""
    return "'" + value.replace("'", "''") + "'"


def tenant_view_ddl(tenant: str) -> list[str]:
    """TEMP views that shadow the user-facing names with the tenant's rows only (one connection)."""
    cond = f"tenant = {quote_literal(tenant)}"
    return [f"CREATE OR REPLACE TEMP VIEW {name} AS {VIEWS[name](cond)}" for name in TENANT_VIEWS]
