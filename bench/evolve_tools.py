"""The tool-argument scenario of ``bench.evolve``: an agent that must call a tool whose parameter is loosely
declared, a tool that rejects what the model writes, and the control plane's own diagnosis and rule-based
proposer drafting the schema change that fixes it.

The agent forces a call to ``book_meeting`` (declared ``{"date": {"type": "string"}}``) through the proxy,
runs the tool on the arguments it got, sends the tool's answer back (one more model call, so the result is
recorded on the asking step) and posts the tool's verdict as the trajectory's reward: 1 booked, 0 refused.
The tool accepts ISO dates only and says so when it refuses (``not in the format YYYY-MM-DD``). Unconstrained,
SmolLM2 writes a sentence into the date; once the parameter carries a ``pattern``, the model server decodes
the call under it and the model writes a date.

    python -m bench.evolve      # runs this scenario with the others
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from typing import Any

import httpx

from app.commands.evolve import ledger_entry
from app.config import SluiceConfig
from governance.evolve.diagnosis import Diagnosis
from pipeline.evolve.diagnose import run_diagnosis
from pipeline.evolve.proposers.base import ProposerContext
from pipeline.evolve.proposers.registry import draft_proposals
from pipeline.evolve.proposers.tool_format import ToolFormatProposer
from pipeline.evolve.publish import EvolutionPublisher
from sinks.clients import connect_client
from sluice.evolution import Proposal

ISO_DATE = r"\d{4}-\d{2}-\d{2}"


@dataclass(frozen=True)
class BookingTool:
    """``book_meeting(date)``: books when the date is an ISO calendar date, else refuses and says why."""

    name: str = "book_meeting"

    def declaration(self) -> dict[str, Any]:
        return {"type": "function", "function": {
            "name": self.name, "description": "Book the meeting the user asks for.",
            "parameters": {"type": "object", "required": ["date"], "properties": {
                "date": {"type": "string", "description": "The day of the meeting."}}},
        }}  # fmt: skip

    def run(self, arguments: str) -> tuple[bool, str]:
        try:
            date = json.loads(arguments).get("date")
        except (ValueError, AttributeError):
            return False, "Error: the arguments are not a JSON object with a date"
        ok = isinstance(date, str) and re.fullmatch(ISO_DATE, date) is not None
        if ok:
            try:
                dt.date.fromisoformat(date)
            except ValueError:
                ok = False
        if not ok:
            return False, f"Error: date {str(date)[:60]!r} is not in the format YYYY-MM-DD"
        return True, f"booked for {date}"


def grader_pattern(tool: BookingTool) -> str:
    """What the task's grader accepts in a reply (``name(arguments)`` for a tool call): a call the tool
    books, i.e. an ISO date in its arguments."""
    return re.escape(tool.name) + r'\(\{"date": "' + ISO_DATE + r'"\}\)'


def tool_trajectory(http: httpx.Client, root: str, headers: dict[str, str], model: str, system: str,
                    question: str, tool: BookingTool) -> float:  # fmt: skip
    """One trajectory: the forced call, the tool run on its arguments, the result sent back. Returns the
    tool's verdict (1 booked, 0 refused)."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
    body = {"model": model, "max_tokens": 24, "temperature": 0.0, "messages": messages,
            "tools": [tool.declaration()],
            "tool_choice": {"type": "function", "function": {"name": tool.name}}}  # fmt: skip
    resp = http.post(f"{root}/v1/chat/completions", json=body, headers=headers)
    resp.raise_for_status()
    msg = resp.json()["choices"][0]["message"]
    calls = msg.get("tool_calls") or []
    if not calls:
        return 0.0
    call = calls[0]
    ok, result = tool.run(call["function"]["arguments"])
    follow = [*messages, {"role": "assistant", "content": None, "tool_calls": [call]},
              {"role": "tool", "tool_call_id": call["id"], "content": result}]  # fmt: skip
    again = {**body, "messages": follow, "tool_choice": "none", "max_tokens": 8}
    http.post(f"{root}/v1/chat/completions", json=again, headers=headers).raise_for_status()
    return 1.0 if ok else 0.0


def propose_from_diagnosis(
    cfg: SluiceConfig, pub: EvolutionPublisher, tenant: str, task: str, tool: str
) -> tuple[Proposal, Diagnosis]:
    """Diagnose the store as ``sluice evolve propose`` does, take the tool-schema cluster of the scope and
    tool, draft its proposal with the rule-based tool proposer, and record it in the ledger."""
    client = connect_client(cfg.sink_settings(), None)
    try:
        diagnosis, rows = run_diagnosis(client, cfg.evolve.propose.diagnosis)
    finally:
        client.close()
    clusters = [c for c in diagnosis.clusters if (c.tenant, c.task_id, c.tool) == (tenant, task, tool)]
    if not clusters:
        raise RuntimeError(f"diagnosis found no cluster for {tool} in {tenant}/{task}: {diagnosis.clusters}")
    context = ProposerContext(rows=rows, success_reward=cfg.evolve.propose.diagnosis.failure_reward_below)
    proposals = draft_proposals(clusters, context, [ToolFormatProposer()])
    if not proposals:
        raise RuntimeError(f"the tool proposer drafted nothing: {context.notes}")
    proposal = proposals[0]
    pub.record(ledger_entry(proposal).model_copy(update={"actor": "bench"}))
    return proposal, diagnosis
