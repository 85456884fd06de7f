"""The verifiable tasks by name."""

from __future__ import annotations

from pipeline.learn.tasks.arithmetic import ArithmeticTask
from pipeline.learn.tasks.base import VerifiableTask
from pipeline.learn.tasks.extraction import ExtractionTask
from pipeline.learn.tasks.order_lookup import OrderLookupTask
from pipeline.learn.tasks.tool_call import ToolCallTask

TASKS: dict[str, type[VerifiableTask]] = {
    ArithmeticTask.name: ArithmeticTask,
    ExtractionTask.name: ExtractionTask,
    OrderLookupTask.name: OrderLookupTask,
    ToolCallTask.name: ToolCallTask,
}


def build_tasks(names: list[str] | tuple[str, ...]) -> list[VerifiableTask]:
    """One instance per name; an unknown name is an error that lists the known ones."""
    unknown = [n for n in names if n not in TASKS]
    if unknown:
        raise ValueError(f"unknown task(s) {unknown}; known: {sorted(TASKS)}")
    return [TASKS[n]() for n in names]
