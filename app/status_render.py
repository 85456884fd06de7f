"""The text ``sluice status`` prints: every service's state first, then per-topic and per-tenant figures,
then each component's counters and the policy servers, as one table each. Counts print as integers.

    sluice status
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.status_metrics import Figures

if TYPE_CHECKING:
    from app.status import Status
    from trainers.serving.policy_view import PolicyView

# Per component, the figures worth a line (a figure is shown when its name contains one of these).
SHOWN: dict[str, tuple[str, ...]] = {
    "proxy": ("spool", "requests_total", "events_total", "publish", "errors_total"),
    "stages": ("workers", "pending", "_in", "emitted", "deadlettered", "processed", "dead_letters"),
    "sink": ("records_total", "rows_written", "dead_letters", "lag_total"),
    "trainer": ("step", "reward", "version"),
}
_PREFIXES = ("sluice_proxy_", "sluice_stages_", "sluice_sink_")


def _short(name: str) -> str:
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _value(v: object) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def table(header: list[str], rows: list[list[object]], indent: str = "  ") -> list[str]:
    """Rows under a header, each column as wide as its widest cell."""
    cells = [header, *([_value(c) for c in row] for row in rows)]
    widths = [max(len(str(r[i])) for r in cells) for i in range(len(header))]
    return [
        indent + "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells
    ]


def render_services(services: dict[str, dict]) -> list[str]:
    rows = []
    for name, svc in services.items():
        last = f" (last: {svc['last_exit']})" if svc.get("last_exit") else ""
        rows.append([name, svc.get("state", "?"), svc.get("restarts", 0), f"{svc.get('detail', '')}{last}"])
    return ["services", *table(["service", "state", "restarts", "detail"], rows)]


def render_figures(name: str, value: Figures | str) -> list[str]:
    if isinstance(value, str):
        return [f"{name:<9} {value}"]
    keys = SHOWN.get(name, ())
    picked = {k: v for k, v in value.items() if any(s in k for s in keys)} or value
    return [f"{name:<9} " + ", ".join(f"{_short(k)}={_value(v)}" for k, v in sorted(picked.items()))]


def render_policy(view: PolicyView) -> list[str]:
    rows: list[list[object]] = []
    learner = view.learner_version
    for s in view.servers:
        if s.error is not None:
            rows.append([s.url, "-", "-", "-", s.error])
            continue
        behind = "-"
        if learner and learner.isdigit() and (s.serving_version or "").isdigit():
            behind = str(int(learner) - int(s.serving_version or 0))
        rows.append([s.url, s.serving_version or "-", ",".join(s.versions) or "-", behind, ""])
    head = f"policy servers (learner at {learner or '-'})"
    return [head, *table(["server", "serving", "kept", "behind", "error"], rows)] if rows else []


def reward_by_version(versions: list[dict] | None) -> str:
    """``0: 0.25 (12)  acme.1: 0.8 (6)``: mean reward (rewarded trajectories) per serving version."""
    parts = []
    for v in versions or []:
        mean = "-" if v.get("mean_reward") is None else f"{v['mean_reward']:.3g}"
        parts.append(f"{v['policy_version']}: {mean} ({v.get('rewarded', 0)})")
    return "  ".join(parts) or "-"


def render_tenant_policies(policies: list[dict] | str) -> list[str]:
    """Per tenant: the version it is served and why (its own scope's, the shared one's, the default), that
    version's parent and this tenant's trajectories in its lineage (of how many tenants), reward by version."""
    if isinstance(policies, str):
        return [f"policies  {policies}"]
    rows: list[list[object]] = []
    for p in policies:
        served = p.get("served_version") or "default"
        lineage = "-"
        if p.get("lineage_parent") is not None:
            lineage = (
                f"parent {p['lineage_parent']}, {p['lineage_trajectories']} own rows, "
                f"{p['lineage_tenants']} tenant(s)"
            )
        rows.append(
            [
                p["tenant"],
                served,
                p.get("served_by", "-"),
                lineage,
                reward_by_version(p.get("reward_by_version")),
            ]
        )
    header = ["tenant", "served", "by", "lineage (own trajectories)", "mean reward by version (rewarded)"]
    return ["tenant policies", *table(header, rows)] if rows else []


def render(status: Status) -> str:
    lines = render_services(status.services)
    lines.append(f"broker    {status.broker}")
    groups = {g.topic: g for g in status.groups}
    if status.topics:
        rows: list[list[object]] = []
        for logical, records in status.topics.items():
            rows.append([logical, records, "", "", ""])
        for g in status.groups:
            rate = f"{g.rate_per_s:.1f}/s" if g.rate_per_s is not None else "-"
            rows.append([f"  {g.topic}", "", g.group, g.lag, rate])
        lines += ["topics", *table(["topic", "records", "consumer group", "lag", "throughput"], rows)]
    elif not groups:
        lines.append("topics    unknown (broker unreachable)")
    if isinstance(status.tenants, str):
        lines.append(f"tenants   {status.tenants}")
    elif status.tenants:
        rows = [[t["tenant"], t["trajectories"], t["rewarded"], t["steps"]] for t in status.tenants]
        lines += [
            "tenants (landed in the store)",
            *table(["tenant", "trajectories", "rewarded", "steps"], rows),
        ]
    if status.tenant_policies != status.tenants:  # the same "sink down" is said once
        lines += render_tenant_policies(status.tenant_policies)
    for name in ("proxy", "stages", "sink", "trainer"):
        lines += render_figures(name, getattr(status, name))
    if status.policy is not None:
        lines += render_policy(status.policy)
    return "\n".join(lines)
