"""Reading trajectories whose steps travel by reference (layout 2.0): a topic reader's step cache.

On the audited and train topics a version is a header (``Trajectory`` with ``steps_ref``) preceded, on
the same partition, by the ``TrajectoryStep`` records it adds. ``StepCache`` keeps the step records read
so far per trajectory (the newest record of each step id wins) and ``resolve`` turns a header into the
inline layout (``Trajectory.steps`` filled, in step order), checked against the header's count and chain
digest: a reader that lacks a step (it started reading after the step's record, or evicted it) gets
``StepsMissing`` and never a partial trajectory. A header of the inline layout (1.0) passes unchanged.

    pytest tests/sluice/test_trajectory_refs.py
"""

from __future__ import annotations

from collections import OrderedDict

from sluice.events import StepEvent, Trajectory, TrajectoryStep, step_order
from sluice.step_refs import StepRef, chain_digest


class StepsMissing(ValueError):
    """The reader does not hold exactly the steps a header references."""


def inline(header: Trajectory, held: list[tuple[StepEvent, str]]) -> Trajectory:
    """``header`` with its steps inline, from the held ``(step, digest)`` pairs of its trajectory (every
    step record read so far); raises ``StepsMissing`` when they are not exactly the referenced steps."""
    ref = header.steps_ref
    if ref is None:
        return header
    if ref.count == 0:
        return header.model_copy(update={"steps": []})
    ordered = sorted(held, key=lambda p: step_order(p[0]))
    refs = [StepRef(event_id=s.event_id, digest=d) for s, d in ordered]
    if len(refs) != ref.count or chain_digest(refs) != ref.digest:
        raise StepsMissing(
            f"trajectory {header.trajectory_id} v{header.version}: {len(refs)} of {ref.count} referenced "
            "steps held, or other content"
        )
    return header.model_copy(update={"steps": [s for s, _ in ordered]})


class StepCache:
    """Step records per trajectory, the least recently used trajectory evicted past ``max_trajectories``."""

    def __init__(self, max_trajectories: int = 10_000) -> None:
        self.max_trajectories = max_trajectories
        self._by_trajectory: OrderedDict[str, dict[str, tuple[StepEvent, str]]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._by_trajectory)

    def add(self, record: TrajectoryStep) -> None:
        steps = self._by_trajectory.setdefault(record.trajectory_id, {})
        self._by_trajectory.move_to_end(record.trajectory_id)
        steps[record.step.event_id] = (record.step, record.digest)
        while len(self._by_trajectory) > self.max_trajectories:
            self._by_trajectory.popitem(last=False)

    def resolve(self, header: Trajectory) -> Trajectory:
        """``header`` inline (see ``inline``); raises ``StepsMissing``."""
        if header.steps_ref is None:
            return header
        held = self._by_trajectory.get(header.trajectory_id, {})
        if header.steps_ref.count == 0:
            self._by_trajectory.pop(header.trajectory_id, None)  # content dropped: nothing to keep
        return inline(header, list(held.values()))

    def drop(self, trajectory_id: str) -> None:
        """Forget a trajectory's steps (it was erased)."""
        self._by_trajectory.pop(trajectory_id, None)
