"""Which policy version each configured policy server serves, and which version the learner is at.

The learner's version comes from its output dir: ``policy_state.json`` (rewritten after every update by the
live learner), else the last ``metrics.jsonl`` line's ``policy_version``. Used by ``sluice status``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from sluice.policy_client import PolicyClientError, PolicyFleet
from trainers.live.policy_state import read_policy_state
from trainers.settings import TrainerSettings


@dataclass
class ServerView:
    url: str
    serving_version: str | None = None
    versions: list[str] = field(default_factory=list)
    candidates: list[str] = field(default_factory=list)
    error: str | None = None  # set when the server could not be read


@dataclass
class PolicyView:
    learner_version: str | None
    servers: list[ServerView]


def learner_version(output_dir: Path) -> str | None:
    state = read_policy_state(output_dir)
    if state is not None:
        return str(state.policy_version)
    metrics = output_dir / "metrics.jsonl"
    last = None
    try:
        with metrics.open("rb") as f:
            for line in f:
                if line.strip():
                    last = line
    except OSError:
        return None
    try:
        value = json.loads(last).get("policy_version") if last else None
    except (ValueError, AttributeError):
        return None
    return None if value is None else str(value)


def policy_view(cfg: TrainerSettings, timeout_s: float = 2.0) -> PolicyView:
    servers = []
    for url, got in PolicyFleet(cfg.trainer.policy_server_urls(), timeout_s).status().items():
        if isinstance(got, PolicyClientError):
            servers.append(ServerView(url, error="down" if got.status == 0 else got.message))
        else:
            servers.append(ServerView(url, got.serving_version, list(got.versions), list(got.candidates)))
    return PolicyView(learner_version(cfg.path(cfg.trainer.output_dir)), servers)


def render_policy(view: PolicyView) -> list[str]:
    lines = [f"{'learner':<11} policy_version={view.learner_version or '-'}"]
    for s in view.servers:
        if s.error is not None:
            lines.append(f"{'policy':<11} {s.url} {s.error}")
            continue
        lag = ""
        if view.learner_version and view.learner_version.isdigit() and (s.serving_version or "").isdigit():
            lag = f" behind_learner={int(view.learner_version) - int(s.serving_version or 0)}"
        kept = ",".join(v for v in s.versions if v not in s.candidates)
        cands = f" candidates={','.join(s.candidates)}" if s.candidates else ""
        lines.append(f"{'policy':<11} {s.url} serving={s.serving_version} kept={kept}{cands}{lag}")
    return lines
