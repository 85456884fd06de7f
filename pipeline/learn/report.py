"""What the learning loop shows: reward per policy version from DuckDB, and a PNG plot of it.

The table is one SQL query through the sink's query client — the same path as ``sluice query`` — grouping
the graded attempts by the policy version that served them (``steps.model_version``, recorded by the proxy
from the policy server's response). The plot has two panels: mean reward per policy version, and a rolling
mean of reward over wall-clock time with each point coloured by its version.

    sluice query "$(python -c 'from pipeline.learn.report import version_table_sql; print(version_table_sql())')"
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.demo.summary import rows
from sinks.base import StoreClient
from sluice.events import TENANT_SEP


def rewarded_with_prefix(prefix: str) -> str:
    """Rewarded trajectories whose local id (after the tenant scope ``tenant~``) starts with ``prefix``."""
    p = prefix.replace(chr(39), chr(39) * 2)
    return f"t.rewarded AND (t.trajectory_id LIKE '{p}%' OR t.trajectory_id LIKE '%{TENANT_SEP}{p}%')"


LAST_STEP = "s.step_index = (SELECT max(x.step_index) FROM steps x WHERE x.trajectory_id = s.trajectory_id)"


def steps_per_trajectory_sql(prefix: str = "learn-") -> str:
    """Mean model calls per rewarded trajectory whose id has ``prefix``."""
    return (
        "SELECT avg(n) AS mean FROM (SELECT s.trajectory_id, count(DISTINCT s.step_index) AS n "
        f"FROM steps s JOIN trajectories t USING (trajectory_id) WHERE {rewarded_with_prefix(prefix)} "
        "GROUP BY s.trajectory_id)"
    )


def version_table_sql(prefix: str = "learn-") -> str:
    """Mean checker reward per serving policy version, over rewarded trajectories whose id has ``prefix`` (a
    multi-step trajectory counts once, under the version that served its answer: its last step)."""
    return (
        "SELECT s.model_version AS policy_version, count(*) AS answers, round(avg(t.reward), 3) AS mean_reward, "
        "strftime(min(s.created_at), '%H:%M:%S') AS first_answer, strftime(max(s.created_at), '%H:%M:%S') AS last_answer "
        f"FROM steps s JOIN trajectories t USING (trajectory_id) WHERE {rewarded_with_prefix(prefix)} AND {LAST_STEP} "
        "GROUP BY s.model_version ORDER BY TRY_CAST(s.model_version AS INTEGER) NULLS FIRST, s.model_version"
    )


def points_sql(prefix: str = "learn-") -> str:
    """One row per graded attempt: when it was answered, which version served it, its reward."""
    return (
        "SELECT s.trajectory_id, epoch(s.created_at) AS at_s, s.model_version AS policy_version, t.reward AS reward "
        f"FROM steps s JOIN trajectories t USING (trajectory_id) WHERE {rewarded_with_prefix(prefix)} AND {LAST_STEP} "
        "ORDER BY at_s"
    )


def version_table(client: StoreClient, prefix: str = "learn-") -> list[dict[str, Any]]:
    return rows(client, version_table_sql(prefix))


def version_number(v: str | None) -> int | None:
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


def rolling(values: list[float], window: int) -> list[float]:
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def plot(
    series: dict[str, list[dict[str, Any]]],
    out: Path,
    title: str = "Reward of live traffic",
    window: int = 24,
) -> Path:
    """Write the two-panel PNG. ``series``: label -> points (``at``, ``policy_version``, ``reward``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (by_version, by_time) = plt.subplots(1, 2, figsize=(11, 4.2))
    t0 = min((p["at_s"] for pts in series.values() for p in pts), default=0.0)
    for label, pts in series.items():
        groups: dict[int, list[float]] = {}
        for p in pts:
            n = version_number(p["policy_version"])
            if n is not None:
                groups.setdefault(n, []).append(float(p["reward"]))
        if groups:
            xs = sorted(groups)
            by_version.plot(xs, [sum(groups[x]) / len(groups[x]) for x in xs], marker="o", label=label)
        if pts:
            minutes = [(p["at_s"] - t0) / 60 for p in pts]
            smooth = rolling([float(p["reward"]) for p in pts], window)
            by_time.plot(minutes, smooth, linewidth=1, alpha=0.6, label=f"{label} (rolling {window})")
            colours = [version_number(p["policy_version"]) or 0 for p in pts]
            by_time.scatter(minutes, smooth, c=colours, cmap="viridis", s=8)
    by_version.set(xlabel="policy version", ylabel="mean checker reward", title="reward per policy version")
    by_time.set(
        xlabel="minutes since first answer", ylabel="reward", title="reward over time (colour = version)"
    )
    for ax in (by_version, by_time):
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
