"""Verifiable tasks: each one writes its problems and owns the grader that scores a reply to them."""

from pipeline.learn.tasks.arithmetic import ArithmeticTask
from pipeline.learn.tasks.base import Problem, VerifiableTask
from pipeline.learn.tasks.extraction import ExtractionTask
from pipeline.learn.tasks.order_lookup import OrderLookupTask
from pipeline.learn.tasks.registry import TASKS, build_tasks
from pipeline.learn.tasks.tool_call import ToolCallTask
from pipeline.learn.tasks.tool_task import ToolCall, ToolTask

__all__ = [
    "TASKS",
    "ArithmeticTask",
    "ExtractionTask",
    "OrderLookupTask",
    "Problem",
    "ToolCall",
    "ToolCallTask",
    "ToolTask",
    "VerifiableTask",
    "build_tasks",
]
