"""Tool routing and argument format, derived from the calls themselves (no model).

For an argument-format cluster it compares the failing calls' arguments with the successful calls' to
the same tool: an argument whose successful values all share one shape (``2026-05-10`` -> ``\\d{4}-\\d{2}-
\\d{2}``) that the failing values lack is the one the tool is strict about. The draft constrains that
parameter in the tool's declared schema (``pattern`` plus a description with the tool's own words from
its error message and an example). When no call succeeded, the format the tool's error message states
(``one of: low, normal, high`` -> ``enum``; ``YYYY-MM-DD`` -> ``pattern``; ``governance.evolve.
stated_format``) constrains the argument it names instead. Without a declaration, or for a harness
cluster, it becomes a harness item saying the same. A model server that honours the schema (``sluice
serve-model`` decodes forced calls under it) then can only write values the tool accepts. For a routing cluster (a tool that does not exist) it names the tool the
successful trajectories of the scope called instead.
"""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from typing import Any

from governance.evolve.stated_format import stated_argument
from pipeline.evolve.proposers.base import ProposerContext, draft_proposal
from sluice.evolution import FailureCluster, HarnessItem, Proposal, Surface, ToolSchemaChange

_HINT = re.compile(
    r"((?:expected|must be|must match|should be)\b\s*(?:in\s+)?(?:the\s+)?(?:format|like)?\s*:?\s*([^.;,\n]{2,80}))",
    re.IGNORECASE,
)
_META = set(".^$*+?()[]{}|\\")
_ROUTING_WORDS = re.compile(r"unknown|no such|not found|does not exist|not (a )?(valid|declared|available)")


def _token(ch: str) -> str:
    if ch.isdigit():
        return r"\d"
    if ch.isascii() and ch.isalpha():
        return "[A-Z]" if ch.isupper() else "[a-z]"
    return "\\" + ch if ch in _META else ch


def value_shape(value: str) -> str:
    """A regular expression of the value's shape: character classes with run lengths."""
    out: list[str] = []
    runs: list[tuple[str, int]] = []
    for tok in map(_token, value):
        if runs and runs[-1][0] == tok:
            runs[-1] = (tok, runs[-1][1] + 1)
        else:
            runs.append((tok, 1))
    for tok, n in runs:
        out.append(tok if n == 1 else f"{tok}{{{n}}}")
    return "^" + "".join(out) + "$"


def _args(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text or "")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def strict_argument(failing: list[dict[str, Any]], ok: list[dict[str, Any]]) -> tuple[str, str, str] | None:
    """(argument, pattern, example) for the argument whose successful values share one shape that the
    failing values do not have; None when no argument tells them apart."""
    best: tuple[int, str, str, str] | None = None
    for key in sorted({k for a in ok for k, v in a.items() if isinstance(v, str)}):
        good = [a[key] for a in ok if isinstance(a.get(key), str)]
        shapes = {value_shape(v) for v in good}
        if len(shapes) != 1:
            continue
        (shape,) = shapes
        bad = [a[key] for a in failing if isinstance(a.get(key), str)]
        misses = sum(1 for v in bad if not re.fullmatch(shape, v))
        if misses and (best is None or misses > best[0]):
            best = (misses, key, shape, good[0])
    return None if best is None else best[1:]


class ToolFormatProposer:
    name = "tool_format"
    surfaces: frozenset[Surface] = frozenset({"tool_schema", "harness"})

    def propose(self, cluster: FailureCluster, context: ProposerContext) -> Proposal | None:
        if not cluster.tool:
            context.note(self.name, cluster, "the cluster names no tool")
            return None
        calls = context.calls_in_scope(cluster)
        failing = [c for _, c in calls if c.tool == cluster.tool and c.failed]
        errors = [c.result or "" for c in failing]
        if cluster.surface == "harness" and any(_ROUTING_WORDS.search(e.lower()) for e in errors):
            return self._routing(cluster, context, calls)
        ok = [_args(c.arguments) for row, c in calls if c.tool == cluster.tool and not c.failed]
        failing_args = [_args(c.arguments) for c in failing]
        found = strict_argument(failing_args, ok)
        if found is not None:
            key, pattern, example = found
            match = next((m for e in errors if (m := _HINT.search(e))), None)
            hint = match.group(2).strip() if match else None
            says = (
                f"the tool says: {match.group(1).strip()}" if match else f"successful calls match {pattern}"
            )
            rationale = (
                f"{len(failing)} calls to {cluster.tool} failed on `{key}` ({says}); {len(ok)} successful "
                f"calls all wrote it like {example!r}"
            )
            text = f"Format: {hint}, e.g. {example}." if hint else f"Format like {example}."
            like = f"exactly like {example} (pattern {pattern})"
            return self._draft(cluster, context, key, {"pattern": pattern}, text, like, rationale)
        stated = stated_argument(errors, failing_args)
        if stated is None:
            context.note(
                self.name,
                cluster,
                f"no argument of {cluster.tool} tells failing calls from good ones, and its errors state "
                "no format",
            )
            return None
        key, constraint, sentence = stated
        rationale = (
            f"{len(failing)} calls to {cluster.tool} failed on `{key}` and none succeeded; the tool says: "
            f"{sentence!r}"
        )
        if "enum" in constraint:
            listed = ", ".join(constraint["enum"])
            text, like = f"One of: {listed}.", f"as one of {listed}"
        else:
            text, like = f"Format: {constraint['pattern']}.", f"matching {constraint['pattern']}"
        return self._draft(cluster, context, key, constraint, text, like, rationale)

    def _draft(self, cluster: FailureCluster, context: ProposerContext, key: str, constraint: dict[str, Any],
               text: str, like: str, rationale: str) -> Proposal:  # fmt: skip
        """A schema change constraining ``key`` when the tool's declaration was recorded, else a harness
        item saying how to write it."""
        assert cluster.tool is not None
        declared = context.declared_tool(cluster, cluster.tool)
        params = (declared or {}).get("function", {}).get("parameters")
        if (
            cluster.surface == "tool_schema"
            and isinstance(params, dict)
            and key in params.get("properties", {})
        ):
            params = copy.deepcopy(params)
            prop = params["properties"][key]
            prop["description"] = f"{prop.get('description', '').strip()} {text}".strip()
            prop.update(constraint)
            change = ToolSchemaChange(tool=cluster.tool, parameters=params)
            return draft_proposal(context, cluster, self.name, "tool_schema", rationale, tools=[change])
        item = HarnessItem(
            text=f"When you call `{cluster.tool}`, write `{key}` {like}; the tool rejects other formats."
        )
        if cluster.surface == "tool_schema":
            rationale += "; the tool's declaration was not recorded, so the format goes in the harness"
        return draft_proposal(context, cluster, self.name, "harness", rationale, harness=[item])

    def _routing(self, cluster: FailureCluster, context: ProposerContext, calls: list) -> Proposal | None:  # noqa: ANN001
        used = Counter(
            c.tool for row, c in calls if c.tool != cluster.tool and not c.failed and context.succeeded(row)
        )
        if not used:
            context.note(
                self.name,
                cluster,
                f"no successful trajectory of the scope called another tool than {cluster.tool}",
            )
            return None
        right, n = used.most_common(1)[0]
        example = next(
            (c.arguments for row, c in calls if c.tool == right and not c.failed and c.arguments), None
        )
        text = f"There is no tool named `{cluster.tool}`; call `{right}` instead"
        text += f" (arguments like {example})." if example else "."
        rationale = f"calls to {cluster.tool} fail as unknown; {n} successful trajectories of the scope called {right}"
        return draft_proposal(
            context, cluster, self.name, "harness", rationale, harness=[HarnessItem(text=text)]
        )
