"""The control plane's contracts: overlays the proxy applies, the assignment that routes traffic to them,
and the ledger entry that records every proposal, gate and decision.

An *overlay* is a versioned set of edits the proxy makes to a request before the backend sees it:
memory entries (facts added to the context), harness items (lines added to, or removed from, the system
prompt one at a time) and tool-schema changes (a tool renamed, re-described or its parameters
constrained). An overlay is scoped to a tenant, and to one task where the agent sends a task id.

An *assignment* (one per scope, keyed ``tenant/task`` on the overlays topic, compacted) names the active
overlay (the control arm), an optional candidate, and the share of trajectories the candidate gets.
The proxy reads the topic and applies the overlay of the arm a trajectory falls in; every step records
``overlay_id`` and ``overlay_arm``, so DuckDB attributes each outcome to the overlay that produced it.

The same assignment carries the *policy arms* of a weights canary: ``active_policy`` (the promoted model
policy version) and ``candidate_policy`` (a trained version the gates are proving). The proxy asks the
model server for the arm's version per request (header ``x-sluice-policy-version``), by the same sticky
hash, so a trajectory stays on one version for all its steps. A weights assignment is scoped like an
overlay's; the tenant ``*`` (``ALL_TENANTS``) covers every tenant that has no assignment of its own.

A trained version is proposed with its *lineage* (``PolicyLineage``): the trajectory versions, tenants and
reward sources it trained on, and its parent. Erasure, audits and ``sluice query`` read it from the ledger.

A *ledger entry* is published on the ledger topic before the change it records takes effect; the sink
stores the ledger in DuckDB.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from sluice.events import _Model, new_id, utcnow

Surface = Literal["memory", "harness", "tool_schema", "weights", "rollback", "noop"]
"""What an update changes: the five ways an agent improves, plus undoing one."""

OverlayArm = Literal["control", "candidate"]

LedgerKind = Literal["proposal", "gate", "decision", "canary", "promotion", "rollback", "note"]


def harness_item_id(text: str) -> str:
    """Address of one system-prompt line: a hash of its whitespace-normalised text (12 hex)."""
    norm = " ".join(text.split())
    return hashlib.sha256(norm.encode()).hexdigest()[:12]


class MemoryEntry(_Model):
    entry_id: str = Field(default_factory=lambda: new_id()[:12])
    text: str = Field(min_length=1, max_length=4000)


class HarnessItem(_Model):
    """One line the overlay adds to the system prompt."""

    item_id: str = Field(default="", description="Defaults to harness_item_id(text).")
    text: str = Field(min_length=1, max_length=4000)

    def model_post_init(self, _ctx: Any) -> None:
        if not self.item_id:
            object.__setattr__(self, "item_id", harness_item_id(self.text))


class ToolSchemaChange(_Model):
    """A change to one tool the agent declares. The proxy rewrites the request's tool list and maps a
    renamed tool's calls back to the agent's name in the response, so the agent sees its own tools."""

    tool: str = Field(min_length=1, description="The tool's name as the agent declares it.")
    rename_to: str | None = None
    description: str | None = None
    parameters: dict[str, Any] | None = Field(
        None, description="Replaces the tool's JSON-Schema parameters (e.g. a constrained pattern or enum)."
    )


class Overlay(_Model):
    overlay_id: str = Field(default_factory=lambda: "ov-" + new_id()[:12])
    tenant: str
    task_id: str | None = None
    version: int = Field(1, ge=1, description="Counts up per scope.")
    parent_id: str | None = Field(
        None, description="The overlay this one edits (None: edits the bare agent)."
    )
    memory: list[MemoryEntry] = Field(default_factory=list)
    harness_add: list[HarnessItem] = Field(default_factory=list)
    harness_remove: list[str] = Field(
        default_factory=list, description="harness_item_id of the agent's own system-prompt lines to drop."
    )
    tools: list[ToolSchemaChange] = Field(default_factory=list)
    created_at: datetime = Field(default_factory=utcnow)

    def is_empty(self) -> bool:
        return not (self.memory or self.harness_add or self.harness_remove or self.tools)

    def content_fingerprint(self) -> str:
        """Hash of what the overlay changes (not of its id or time): equal edits, equal fingerprint."""
        body = self.model_dump(mode="json", include={"memory", "harness_add", "harness_remove", "tools"})
        for entry in body["memory"]:
            entry.pop("entry_id", None)
        raw = json.dumps(body, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(raw.encode()).hexdigest()[:16]


ALL_TENANTS = "*"
"""The tenant of a scope that covers every tenant (a weights canary of the pooled policy)."""

SHARED_SCOPE = "shared"
"""The learning scope of the pooled policy, trained on every tenant that allows pooling."""

LearningScope = Literal["own", "shared", "none"]
"""What a tenant's consented data may train: its own adapter, the pooled one, or nothing."""


def policy_version_name(scope: str, number: int) -> str:
    """A model policy version's name: ``7`` in the shared scope, ``acme.7`` in tenant acme's own."""
    return str(number) if scope == SHARED_SCOPE else f"{scope}.{number}"


def parse_policy_version(name: str) -> tuple[str, int] | None:
    """(learning scope, number) of a version name; None for a name no trainer made (a config string)."""
    scope, dot, number = name.rpartition(".")
    if not dot:
        scope, number = SHARED_SCOPE, name
    if not number.isdigit() or (dot and not scope):
        return None
    return scope, int(number)


class PolicyRoutes(_Model):
    """What the proxy needs to know of learning scopes to route a tenant's calls: a tenant that trains its
    own line is served that line (the base version until one of its own is promoted), never the pooled
    one; a tenant that trains none is served ``untrained`` (the pooled line, or the base)."""

    default_scope: LearningScope = "own"
    scopes: dict[str, LearningScope] = Field(default_factory=dict)
    untrained: Literal["shared", "base"] = "shared"

    def scope_of(self, tenant: str) -> LearningScope:
        return self.scopes.get(tenant, self.default_scope)

    def pooled(self, tenant: str) -> bool:
        """Whether the tenant may be served the pooled line."""
        scope = self.scope_of(tenant)
        return scope == "shared" or (scope == "none" and self.untrained == "shared")


def scope_tenant(scope: str) -> str:
    """The tenant whose traffic a learning scope's canary runs on (every tenant's for the shared one)."""
    return ALL_TENANTS if scope == SHARED_SCOPE else scope


def scope_key(tenant: str, task_id: str | None) -> str:
    """Key of an assignment on the overlays topic: ``tenant/task`` or ``tenant/*`` for every task."""
    return f"{tenant}/{task_id or '*'}"


class OverlayAssignment(_Model):
    """What the proxy applies in one scope. The latest record per ``scope_key`` wins."""

    event_type: Literal["overlay_assignment"] = "overlay_assignment"
    event_id: str = Field(default_factory=new_id)
    tenant: str
    task_id: str | None = None
    active: Overlay | None = Field(None, description="The control arm; None serves the bare agent.")
    candidate: Overlay | None = None
    canary_share: float = Field(0.0, ge=0.0, le=1.0, description="Share of trajectories given the candidate.")
    active_policy: str | None = Field(
        None, description="Model policy version the control arm is served (None: the server's default)."
    )
    candidate_policy: str | None = Field(
        None, description="Model policy version the candidate arm is served (a weights canary)."
    )
    proposal_id: str | None = Field(None, description="The proposal whose canary this is.")
    ledger_entry_id: str | None = Field(None, description="The ledger entry that made this change.")
    updated_at: datetime = Field(default_factory=utcnow)

    @property
    def key(self) -> str:
        return scope_key(self.tenant, self.task_id)

    @property
    def has_candidate(self) -> bool:
        return self.candidate is not None or self.candidate_policy is not None


class LineageItem(_Model):
    """One trajectory version a policy version trained on."""

    trajectory_id: str
    version: int = Field(ge=0, description="The trajectory version (late rewards make new ones).")
    tenant: str
    samples: int = Field(1, ge=1, description="Training rows it gave (one per choice of each step).")
    reward: float | None = None
    reward_sources: list[str] = Field(default_factory=list)


class PolicyLineage(_Model):
    """What trained one model policy version: its data, directly, and its parent (whose lineage holds the
    rest). Recorded with the version's weights proposal, before any request can be served by it."""

    version: str
    parent: str | None = Field(None, description="The version its update started from.")
    scope: str = Field("shared", description="The learning scope: 'shared' (pooled) or a tenant's own.")
    promotion: Literal["gated", "direct"] = "gated"
    items: list[LineageItem] = Field(default_factory=list)
    samples: int = Field(0, ge=0)
    tenants: dict[str, int] = Field(default_factory=dict, description="tenant -> training rows.")
    reward_sources: dict[str, int] = Field(default_factory=dict, description="source -> training rows.")
    rebuild_of: list[str] = Field(
        default_factory=list,
        description="Versions an erasure tainted that this one rebuilds: their rows minus the erased ones.",
    )
    trained_at: datetime = Field(default_factory=utcnow)


class LedgerEntry(_Model):
    """One line of the evolution ledger: a proposal, a gate's result, a decision, a canary reading, a
    promotion or a rollback, with its evidence (queries and numbers) and the diff it applies."""

    event_type: Literal["ledger"] = "ledger"
    entry_id: str = Field(default_factory=new_id)
    proposal_id: str
    kind: LedgerKind
    surface: Surface
    tenant: str
    task_id: str | None = None
    gate: str | None = Field(None, description="shadow, replay, offline, canary or rollback for kind=gate.")
    passed: bool | None = None
    decision: str | None = Field(None, description="promote, continue, abort, rollback, hold, ...")
    summary: str = ""
    evidence: dict[str, Any] = Field(default_factory=dict, description="Queries and the numbers they gave.")
    diff: dict[str, Any] = Field(default_factory=dict)
    overlay_id: str | None = None
    previous_overlay_id: str | None = None
    policy_version: str | None = None
    actor: str = Field("sluice-evolve", description="Who made the change: the scheduler or an operator.")
    created_at: datetime = Field(default_factory=utcnow)


class Evidence(_Model):
    """One query the control plane ran and the numbers it gave (stored in the ledger as is)."""

    query: str
    numbers: dict[str, Any] = Field(default_factory=dict)


class FailureCluster(_Model):
    """Trajectories that fail the same way, found by diagnosis, with the surface that fits them."""

    cluster_id: str = Field(default_factory=lambda: "cl-" + new_id()[:12])
    tenant: str | None = Field(None, description="None: the failure spans tenants.")
    task_id: str | None = None
    tool: str | None = None
    error: str | None = Field(None, description="Error text, exit code or finish reason the steps share.")
    signal: str = Field(description="What marks the failure: reward, error, tool_error, feedback, ...")
    trajectories: int = Field(ge=0)
    failures: int = Field(ge=0)
    mean_reward: float | None = None
    baseline_reward: float | None = Field(None, description="The same scope's reward outside the cluster.")
    sample_trajectory_ids: list[str] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)
    surface: Surface = Field(description="The update that fits: memory, harness, tool_schema, weights, noop.")
    reason: str = Field("", description="Why that surface.")


class Proposal(_Model):
    """A drafted update: the candidate overlay (or policy version), the cluster it answers, who drafted it."""

    proposal_id: str = Field(default_factory=lambda: "pr-" + new_id()[:12])
    surface: Surface
    tenant: str
    task_id: str | None = None
    cluster: FailureCluster | None = None
    candidate: Overlay | None = Field(None, description="memory, harness, tool_schema: the overlay to try.")
    base_overlay_id: str | None = Field(None, description="The active overlay the candidate edits.")
    policy_version: str | None = Field(None, description="weights, rollback: the policy version to serve.")
    lineage: PolicyLineage | None = Field(None, description="weights: what trained the version.")
    rationale: str = ""
    proposer: str = Field(description="The proposer that drafted it (rule name or model).")
    created_at: datetime = Field(default_factory=utcnow)
