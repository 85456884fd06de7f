"""The console's SQL: trajectory filters, one trajectory's steps and versions, the learning curve, the
policy each tenant is served and the lineage of a policy version.

Every query runs through the store's query client with the caller's own API key, so a tenant's key
reads its tenant's rows only (the store scopes the views; ``sinks/scoped_query.py``) and the console adds
no access rule of its own. Filter values are validated here and quoted as SQL literals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import get_args

from sinks.views import quote_literal
from sluice.events import ReplayGradeName

ELIGIBILITY = ("train", "audit_only", "drop")
GRADES: tuple[str, ...] = get_args(ReplayGradeName)
PAGE_SIZE = 100


class FilterError(ValueError):
    """A filter value the console cannot use (shown to the user, answered with 400)."""


@dataclass(frozen=True)
class TrajectoryFilter:
    tenant: str = ""
    eligibility: str = ""
    rewarded: str = ""  # "", "yes", "no"
    reward_min: float | None = None
    grade: str = ""
    policy_version: str = ""
    search: str = ""  # a trajectory id prefix

    @classmethod
    def from_query(cls, q: dict[str, str]) -> TrajectoryFilter:
        def pick(name: str, allowed: tuple[str, ...]) -> str:
            value = q.get(name, "").strip()
            if value and value not in allowed:
                raise FilterError(f"{name} must be one of {', '.join(allowed)}")
            return value

        raw_min = q.get("reward_min", "").strip()
        try:
            reward_min = float(raw_min) if raw_min else None
        except ValueError:
            raise FilterError("reward_min must be a number") from None
        return cls(
            tenant=q.get("tenant", "").strip(),
            eligibility=pick("eligibility", ELIGIBILITY),
            rewarded=pick("rewarded", ("yes", "no")),
            reward_min=reward_min,
            grade=pick("grade", GRADES),
            policy_version=q.get("policy_version", "").strip(),
            search=q.get("q", "").strip(),
        )

    def where(self) -> str:
        conds = ["TRUE"]
        if self.tenant:
            conds.append(f"tenant = {quote_literal(self.tenant)}")
        if self.eligibility:
            conds.append(f"eligibility = {quote_literal(self.eligibility)}")
        if self.rewarded:
            conds.append("rewarded" if self.rewarded == "yes" else "NOT coalesce(rewarded, false)")
        if self.reward_min is not None:
            conds.append(f"reward >= {self.reward_min!r}")
        if self.grade:
            conds.append(f"replay_grade = {quote_literal(self.grade)}")
        if self.policy_version:
            conds.append(f"list_contains(model_versions, {quote_literal(self.policy_version)})")
        if self.search:
            conds.append(f"starts_with(trajectory_id, {quote_literal(self.search)})")
        return " AND ".join(conds)


def trajectories_sql(f: TrajectoryFilter, limit: int = PAGE_SIZE) -> str:
    return (
        "SELECT trajectory_id, tenant, version, versions, step_count, reward, rewarded, eligibility, "
        "replay_grade, model_versions, total_tokens, emitted_at FROM trajectories "
        f"WHERE {f.where()} ORDER BY emitted_at DESC, trajectory_id LIMIT {int(limit)}"
    )


def count_sql(f: TrajectoryFilter) -> str:
    return f"SELECT count(*) AS n FROM trajectories WHERE {f.where()}"


FACETS_SQL = {
    "tenant": "SELECT DISTINCT tenant AS v FROM trajectories ORDER BY v",
    "policy_version": (
        "SELECT DISTINCT unnest(model_versions) AS v FROM trajectories WHERE model_versions IS NOT NULL ORDER BY v"
    ),
}


def _of_trajectory(columns: str, table: str, trajectory_id: str, order_by: str = "") -> str:
    """``columns`` of ``table``'s rows of one trajectory, ordered by ``order_by`` when given."""
    sql = f"SELECT {columns} FROM {table} WHERE trajectory_id = {quote_literal(trajectory_id)}"
    return f"{sql} ORDER BY {order_by}" if order_by else sql


def trajectory_sql(trajectory_id: str) -> str:
    return _of_trajectory("* EXCLUDE (subject_ids)", "trajectories", trajectory_id)


def versions_sql(trajectory_id: str) -> str:
    columns = (
        "version, reward, rewarded, reward_count, eligibility, eligibility_reasons, replay_grade, "
        "replay_reasons, step_count, emitted_at"
    )
    return _of_trajectory(columns, "trajectory_versions", trajectory_id, "version")


def rewards_sql(trajectory_id: str) -> str:
    return _of_trajectory("*", "rewards", trajectory_id, "created_at")


def steps_sql(trajectory_id: str) -> str:
    columns = (
        "step_index, request_model, model_version, finish_reason, input_tokens, output_tokens, "
        "latency_ms, error, status_code, entity_count, CAST(new_messages AS VARCHAR) AS new_messages, "
        "CAST(completion AS VARCHAR) AS completion, CAST(json_extract(record, '$.governance.redaction_report.entities') "
        "AS VARCHAR) AS entities"
    )
    return _of_trajectory(columns, "steps", trajectory_id, "step_index")


# The learning curve: trajectories by the policy version that served them (a step's metadata.model_version),
# in the order the versions first served; mean reward over the rewarded ones.
LEARNING_SQL = """
    SELECT s.model_version AS policy_version, count(DISTINCT t.trajectory_id) AS trajectories,
           count(DISTINCT t.trajectory_id) FILTER (WHERE t.reward IS NOT NULL) AS rewarded,
           avg(t.reward) AS mean_reward, min(s.created_at) AS first_served
    FROM steps s JOIN trajectories t USING (trajectory_id)
    WHERE s.model_version IS NOT NULL
    GROUP BY ALL ORDER BY first_served"""


@dataclass
class Page:
    """What a trajectories page shows."""

    rows: list[dict] = field(default_factory=list)
    total: int = 0
    facets: dict[str, list[str]] = field(default_factory=dict)


# The evolution ledger: one row per proposal (its latest entry says where it stands), then one proposal's
# entries in order. Read from the store's `evolution_ledger` view, scoped to the caller's tenant.
PROPOSALS_SQL = """
    SELECT proposal_id, any_value(tenant) AS tenant, any_value(task_id) AS task_id,
           arg_max(surface, created_at) AS surface, arg_max(kind, created_at) AS last_kind,
           arg_max(decision, created_at) FILTER (WHERE decision IS NOT NULL) AS decision,
           count(*) FILTER (WHERE kind = 'gate' AND passed) AS gates_passed,
           count(*) FILTER (WHERE kind = 'gate' AND NOT passed) AS gates_failed,
           arg_min(summary, created_at) AS summary, min(created_at) AS proposed_at,
           max(created_at) AS updated_at
    FROM evolution_ledger GROUP BY proposal_id ORDER BY updated_at DESC LIMIT 200"""


def lineage_sql(proposal_id: str) -> str:
    """A weights proposal's data: the trajectory versions its policy version trained on."""
    return (
        "SELECT policy_version, parent, trajectory_id, trajectory_version, tenant, samples, reward, "
        f"reward_sources FROM policy_lineage WHERE proposal_id = {quote_literal(proposal_id)} "
        "ORDER BY trajectory_id, trajectory_version LIMIT 500"
    )


# Per tenant (the caller's own row for a tenant's key): the policy version it is served now, its lineage
# share and its reward by version (the store's `tenant_policies` view, read from the ledger).
TENANT_POLICIES_SQL = """
    SELECT tenant, served_version, served_by, served_since, lineage_scope, lineage_parent,
           lineage_trajectories, lineage_tenants, reward_by_version
    FROM tenant_policies ORDER BY tenant"""


def version_lineage_sql(policy_version: str) -> str:
    """The trajectory versions one policy version trained on (the caller's own, for a tenant's key)."""
    return (
        "SELECT policy_version, parent, scope, proposal_id, trajectory_id, trajectory_version, tenant, samples, "
        f"reward, reward_sources FROM policy_lineage WHERE policy_version = {quote_literal(policy_version)} "
        "ORDER BY trajectory_id, trajectory_version LIMIT 500"
    )


def ledger_sql(proposal_id: str) -> str:
    return (
        "SELECT entry_id, kind, surface, gate, passed, decision, summary, CAST(evidence AS VARCHAR) AS evidence, "
        "CAST(diff AS VARCHAR) AS diff, overlay_id, previous_overlay_id, policy_version, actor, tenant, task_id, "
        f"created_at FROM evolution_ledger WHERE proposal_id = {quote_literal(proposal_id)} ORDER BY created_at"
    )
