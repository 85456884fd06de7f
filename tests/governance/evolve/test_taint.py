"""An erasure taints the versions that trained on the data and their descendants, never other lines."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from governance.evolve.taint import tainted_versions, untainted_ancestor
from sluice.evolution import LineageItem, PolicyLineage

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def lin(version: str, parent: str | None, *tids: str, at: int = 0, scope: str = "shared") -> PolicyLineage:
    items = [LineageItem(trajectory_id=t, version=1, tenant=t.split("~")[0]) for t in tids]
    return PolicyLineage(
        version=version, parent=parent, scope=scope, items=items, trained_at=T0 + timedelta(seconds=at)
    )


def test_direct_and_descendants_are_tainted_and_other_lines_are_not() -> None:
    lines = [
        lin("acme.1", "0", "acme~a", at=1, scope="acme"),
        lin("acme.2", "acme.1", "acme~b", at=2, scope="acme"),  # clean itself, but starts from acme.1
        lin("acme.3", "acme.2", "acme~c", at=3, scope="acme"),
        lin("globex.1", "0", "globex~x", at=4, scope="globex"),  # another tenant's own line
        lin("1", "0", "acme~z", at=5),
    ]
    tainted = tainted_versions(lines, {"acme~a"})
    assert set(tainted) == {"acme.1", "acme.2", "acme.3"}
    assert tainted["acme.1"].startswith("trained on 1") and tainted["acme.2"] == "descends from vacme.1"
    assert tainted_versions(lines, {"acme~b"}).keys() == {"acme.2", "acme.3"}
    assert tainted_versions(lines, {"nobody~q"}) == {}


def test_a_parent_listed_after_its_child_still_taints_it() -> None:
    lines = [lin("2", "1", "t~b", at=1), lin("1", "0", "t~a", at=2)]  # clocks disagree
    assert set(tainted_versions(lines, {"t~a"})) == {"1", "2"}


def test_the_line_goes_back_to_its_newest_untainted_ancestor_or_the_base() -> None:
    lines = [lin("1", "0", "t~a", at=1), lin("2", "1", "t~b", at=2), lin("3", "2", "t~c", at=3)]
    tainted = tainted_versions(lines, {"t~b"})
    assert untainted_ancestor("3", lines, tainted, "0") == "1"
    assert untainted_ancestor("1", lines, tainted, "0") == "1"  # clean: itself
    everything = tainted_versions(lines, {"t~a"})
    assert untainted_ancestor("3", lines, everything, "0") == "0"
