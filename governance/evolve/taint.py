"""Which model policy versions an erasure taints, and where each learning line goes back to (pure logic).

A version is *tainted* when its own lineage names an erased trajectory (it trained on it directly), or
when its parent is tainted (it starts from weights that did). Erasing one tenant's subject therefore
taints another tenant's versions only where their lineage shares the data: never across own scopes.
A tainted version's line goes back to its newest untainted ancestor (walking the parent links), or to
``base`` when the whole line is tainted.

    tainted = tainted_versions(lineages, {"acme~t1"})
    target = untainted_ancestor("acme.4", lineages, tainted, base="0")
"""

from __future__ import annotations

from collections.abc import Iterable

from sluice.evolution import PolicyLineage


def tainted_versions(lineages: Iterable[PolicyLineage], erased: set[str]) -> dict[str, str]:
    """Tainted version -> why: ``trained on N erased trajectories`` or ``descends from vX``."""
    ordered = sorted(lineages, key=lambda lin: lin.trained_at)
    out: dict[str, str] = {}
    changed = True
    while changed:  # parents may be listed after their children (clock skew): settle to a fixed point
        changed = False
        for lin in ordered:
            if lin.version in out:
                continue
            direct = sum(1 for item in lin.items if item.trajectory_id in erased)
            if direct:
                out[lin.version] = f"trained on {direct} erased trajectory version(s)"
            elif lin.parent is not None and lin.parent in out:
                out[lin.version] = f"descends from v{lin.parent}"
            else:
                continue
            changed = True
    return out


def untainted_ancestor(
    version: str, lineages: Iterable[PolicyLineage], tainted: dict[str, str], base: str
) -> str:
    """The newest version on ``version``'s line that is not tainted (``version`` itself when clean)."""
    parents = {lin.version: lin.parent for lin in lineages}
    seen: set[str] = set()
    current: str | None = version
    while current is not None and current in tainted and current not in seen:
        seen.add(current)
        current = parents.get(current)
    return base if current is None or current in tainted else current
