"""The rows diagnosis reads: one per trajectory, one per tool call, filled from the store's SQL views.

A trajectory row carries its outcome signals (reward, the backend's error, negative feedback, critique)
and what produced it (tenant, task, harness fingerprint, overlay, model version); a tool-call row carries
the call's arguments and the result the agent got back (error flag, exit code, text).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field


class _Row(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class TrajectoryRow(_Row):
    trajectory_id: str
    tenant: str
    task_id: str | None = None
    reward: float | None = None
    harness_fingerprint: str | None = None
    overlay_id: str | None = None
    overlay_arm: str | None = None
    model_version: str | None = None
    error: str | None = Field(None, description="The first upstream error of its steps.")
    status_code: int | None = None
    finish_reason: str | None = None
    final_answer: str | None = Field(None, description="Text of the last assistant message.")
    question: str | None = Field(None, description="Text of the first user message.")
    feedback: list[str] = Field(default_factory=list, description="Feedback signal names it received.")
    critiques: list[str] = Field(default_factory=list, description="Critique texts it received.")


class ToolCallRow(_Row):
    trajectory_id: str
    step_index: int = 0
    tool: str
    arguments: str | None = None
    is_error: bool = False
    exit_code: int | None = None
    result: str | None = None

    @property
    def code(self) -> int | None:
        """The exit code: recorded, else stated in the result text ("exit code 2", "exit status: 1")."""
        if self.exit_code is not None:
            return self.exit_code
        m = _EXIT_IN_TEXT.search(self.result or "")
        return int(m.group(1)) if m else None

    @property
    def failed(self) -> bool:
        """Flagged as an error, a non-zero exit code, or a result that opens as an error report (the
        OpenAI tool message has no error flag, so most agents send failures as text)."""
        code = self.code
        return self.is_error or (code is not None and code != 0) or bool(_ERROR_TEXT.match(self.result or ""))


_EXIT_IN_TEXT = re.compile(r"\bexit(?:ed with)? (?:code|status)\s*[:=]?\s*(\d+)", re.IGNORECASE)
_ERROR_TEXT = re.compile(
    r"\s*(?:\[?error\b|exception\b|traceback \(most recent call last\)|fatal\b|\w+(?:error|exception):)",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"('[^']*'|\"[^\"]*\")")
_NUMBER = re.compile(r"\d+")


def error_signature(text: str | None, exit_code: int | None = None) -> str:
    """What calls that fail the same way share: the first line of the error with quoted values and
    numbers blanked (``date '05/01/2024' is not ISO`` and ``date '1/2/24' is not ISO`` are one error)."""
    line = next((ln.strip() for ln in (text or "").splitlines() if ln.strip()), "")
    line = _NUMBER.sub("N", _QUOTED.sub("'…'", line.lower()))[:120]
    if exit_code not in (None, 0):
        return f"exit {exit_code}: {line}" if line else f"exit {exit_code}"
    return line or "error"


def upstream_signature(row: TrajectoryRow) -> str | None:
    """The backend failure of a trajectory (``HTTP 503``, else its error text), or None."""
    if row.status_code is not None and row.status_code >= 400:
        return f"HTTP {row.status_code}"
    if row.error:
        return error_signature(row.error)
    return None
