"""Timer ticks: the timer never touches tables (Faust tables can only be changed while processing a
record of the same partition); it sends a tick per due trajectory to an internal topic co-partitioned
with the others, and the join agent handles the tick like any record — at least once, offsets committed
after the emission it causes."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class JoinTick(BaseModel):
    model_config = ConfigDict(extra="forbid")

    event_type: str = "tick"
    trajectory_id: str
    due_at: float
