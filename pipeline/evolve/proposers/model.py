"""A configured model drafts the memory entry or harness item from the cluster's evidence.

It asks any OpenAI-compatible backend (``base_url`` + ``model``; e.g. the one ``sluice serve-model``
serves) through a forced function call: ``draft_memory_entry`` for a memory cluster,
``draft_harness_item`` for a harness or tool-schema one, with a single ``text`` argument. The answer is
parsed strictly: exactly one call to that function whose arguments are a JSON object holding only
``text`` (or, from a backend without tool calls, content that is exactly such an object), and the text
must read as a draft: one to three lines, within ``max_chars``, at least three words, no refusal, no
chat-template tokens, not a copied line of the evidence listing (a small model's habits). Any
other answer, an HTTP error or a timeout gives no proposal, with the reason noted and logged. The call
is idempotent: a connection-level failure or a 502/503/504 is tried again (``http``) before that.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError

from pipeline.evolve.config import ModelProposerConfig
from pipeline.evolve.http_calls import CallFailed, open_client, post_json
from pipeline.evolve.proposers.base import ProposerContext, draft_proposal
from sluice.evolution import FailureCluster, HarnessItem, MemoryEntry, Proposal, Surface

log = logging.getLogger(__name__)

_REFUSAL = re.compile(r"\b(i can(no|')t|i am unable|i'm unable|i'm sorry|as an ai|i cannot help)\b", re.I)
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")
_TEMPLATE_TOKEN = re.compile(r"<\|[a-z_]+\|>|</?s>")
_EVIDENCE_LINE = re.compile(
    r"^-?\s*(failed|succeeded|tool said|failing arguments|arguments that worked)\s*:", re.I
)


class DraftRejected(ValueError):
    """The backend's answer is not a usable draft."""


class _Draft(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str


def _function(surface: Surface) -> tuple[str, str]:
    if surface == "memory":
        return "draft_memory_entry", "One fact the agent must be told to answer correctly."
    return "draft_harness_item", "One instruction for the agent's system prompt."


def parse_draft(body: Any, function: str, max_chars: int) -> str:
    """The draft text of a chat completion body, or DraftRejected with the reason."""
    try:
        message = body["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise DraftRejected("the answer has no choices[0].message") from None
    calls = message.get("tool_calls") or []
    if calls:
        if len(calls) != 1:
            raise DraftRejected(f"expected one call to {function}, got {len(calls)}")
        fn = calls[0].get("function") or {}
        if fn.get("name") != function:
            raise DraftRejected(f"the call is to {fn.get('name')!r}, not {function}")
        raw = fn.get("arguments")
    else:
        raw = _FENCE.sub("", (message.get("content") or "").strip())
        if not raw.startswith("{"):
            raise DraftRejected(f"the answer is neither a call to {function} nor a JSON object")
    try:
        text = _Draft.model_validate_json(raw).text.strip()
    except (ValidationError, ValueError, TypeError) as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise DraftRejected(f'the arguments are not {{"text": string}}: {first}') from None
    if not text:
        raise DraftRejected("the draft is empty")
    if len(text) > max_chars:
        raise DraftRejected(f"the draft has {len(text)} characters (at most {max_chars})")
    if len(text.splitlines()) > 3:
        raise DraftRejected("the draft runs over more than three lines")
    if any(ord(ch) < 32 and ch not in "\n\t" for ch in text):
        raise DraftRejected("the draft holds control characters")
    if len(re.findall(r"[^\W\d_]{2,}", text)) < 3:
        raise DraftRejected("the draft has fewer than three words")
    if _REFUSAL.search(text):
        raise DraftRejected("the draft is a refusal")
    if _TEMPLATE_TOKEN.search(text):
        raise DraftRejected("the draft holds chat-template tokens")
    if _EVIDENCE_LINE.match(text):
        raise DraftRejected("the draft copies a line of the evidence")
    return " ".join(text.split())


def evidence_prompt(cluster: FailureCluster, context: ProposerContext, limit: int = 3) -> str:
    """What the model is shown: the scope, the failure, and examples from the rows diagnosis read."""
    rows = context.in_scope(cluster)
    failed = [r for r in rows if not context.succeeded(r)][:limit]
    good = [r for r in rows if context.succeeded(r)][:limit]
    lines = [
        f"Scope: tenant {cluster.tenant or 'all tenants'}, task {cluster.task_id or '-'}.",
        f"Failure: {cluster.failures} of {cluster.trajectories} trajectories ({cluster.signal}); {cluster.reason}.",
    ]
    if cluster.tool:
        lines.append(f"Tool {cluster.tool} fails with: {cluster.error}.")
        examples = cluster.evidence[-1].numbers if cluster.evidence else {}
        for e in examples.get("error_examples", [])[:limit]:
            lines.append(f"- tool said: {e}")
        for a in examples.get("failing_arguments", [])[:limit]:
            lines.append(f"- failing arguments: {a}")
        ok = [
            c.arguments for _, c in context.calls_in_scope(cluster) if c.tool == cluster.tool and not c.failed
        ]
        for a in ok[:limit]:
            lines.append(f"- arguments that worked: {a}")
    for r in failed:
        lines.append(f"- failed: Q: {r.question or '?'} A: {r.final_answer or '(none)'}")
    for r in good:
        lines.append(f"- succeeded: Q: {r.question or '?'} A: {r.final_answer or '(none)'}")
    for c in dict.fromkeys(c for r in rows for c in r.critiques):
        lines.append(f"- operator critique: {c}")
    return "\n".join(lines)


class ModelProposer:
    name = "model"
    surfaces: frozenset[Surface] = frozenset({"memory", "harness", "tool_schema"})

    def __init__(self, cfg: ModelProposerConfig, client: httpx.Client | None = None) -> None:
        self.cfg = cfg
        self._client = client or open_client(cfg.timeout_s, cfg.http)

    def _request(self, cluster: FailureCluster, context: ProposerContext) -> dict[str, Any]:
        function, what = _function(cluster.surface)
        if cluster.surface == "memory":
            ask = "Write the one fact the agent must be told to answer correctly, as one short sentence."
        else:
            ask = "Write one short instruction for the agent's system prompt that makes its tool calls work."
        return {
            "model": self.cfg.model,
            "messages": [
                {"role": "system", "content": f"You fix an AI agent's failures from evidence. {ask}"},
                {"role": "user", "content": f"{evidence_prompt(cluster, context)}\n\n{ask}"},
            ],
            "tools": [{"type": "function", "function": {
                "name": function, "description": what,
                "parameters": {"type": "object", "properties": {"text": {"type": "string", "description": what}},
                               "required": ["text"], "additionalProperties": False},
            }}],
            "tool_choice": {"type": "function", "function": {"name": function}},
            "max_tokens": self.cfg.max_tokens,
            "temperature": self.cfg.temperature,
            "stop": ["\n"],  # a draft is one line
        }  # fmt: skip

    def propose(self, cluster: FailureCluster, context: ProposerContext) -> Proposal | None:
        function, _ = _function(cluster.surface)
        headers = {}
        if self.cfg.api_key is not None:
            headers["Authorization"] = f"Bearer {self.cfg.api_key.get_secret_value()}"
        url = self.cfg.base_url.rstrip("/") + "/chat/completions"
        try:
            resp, _tries = post_json(
                self._client, url, self._request(cluster, context), headers, self.cfg.http
            )
        except CallFailed as err:
            context.note(self.name, cluster, f"{self.cfg.model} at {self.cfg.base_url} did not answer: {err}")
            return None
        if resp.status_code != 200:
            context.note(
                self.name, cluster, f"{self.cfg.model} answered HTTP {resp.status_code}: {resp.text[:200]}"
            )
            return None
        try:
            text = parse_draft(resp.json(), function, self.cfg.max_chars)
        except (DraftRejected, ValueError) as err:
            context.note(self.name, cluster, f"bad output from {self.cfg.model}: {err}")
            return None
        rationale = f"drafted by {self.cfg.model} from the cluster's evidence"
        if cluster.surface == "memory":
            return draft_proposal(context, cluster, f"model:{self.cfg.model}", "memory", rationale,
                                  memory=[MemoryEntry(text=text)])  # fmt: skip
        return draft_proposal(context, cluster, f"model:{self.cfg.model}", "harness", rationale,
                              harness=[HarnessItem(text=text)])  # fmt: skip

    def close(self) -> None:
        self._client.close()
