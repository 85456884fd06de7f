"""Trajectories as verl's RL dataset rows: the ``verl`` export layout (Parquet, one row per trajectory).

verl's ``RLHFDataset`` reads Parquet with ``datasets``, takes ``prompt`` (a chat message list) through
the tokenizer's chat template with a generation prompt, drops prompts over ``max_prompt_length``, and
hands ``data_source``, ``reward_model`` and ``extra_info`` to the reward function
(``compute_score(data_source, solution_str, ground_truth, extra_info)``). Columns:

- ``data_source``: ``"sluice"`` (name it in your reward function to route these rows);
- ``prompt``: what the model saw before its first answer, as ``{role, content}`` messages;
- ``ability``: the agent's task id (``x-sluice-task-id``) when it sent one, else ``"chat"``;
- ``reward_model``: ``{style, ground_truth}``: ``style="rule"`` with the task's reference answer when a
  step recorded one (``hidden_state["reference"]``, what the trainer's traffic task grades against),
  else ``style="model"`` with no ground truth (a reward model or judge must score it);
- ``extra_info``: ``index`` (row number), ``split`` ("train"), the trajectory id and version, tenant,
  the recorded final answer (``response``), its recorded reward, model and policy versions.

``trajectory_id`` is also a top-level column (erasure rewrites the file by it).

    sluice export --layout verl --format parquet --out var/exports/verl/train.parquet
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from sinks.export.layout import context_before, text_content
from sluice.events import StepEvent, Trajectory

DATA_SOURCE = "sluice"
REFERENCE_KEY = "reference"

VERL_SCHEMA = pa.schema(
    [
        ("data_source", pa.string()),
        ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
        ("ability", pa.string()),
        ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
        (
            "extra_info",
            pa.struct(
                [
                    ("index", pa.int64()),
                    ("split", pa.string()),
                    ("trajectory_id", pa.string()),
                    ("version", pa.int32()),
                    ("tenant", pa.string()),
                    ("response", pa.string()),
                    ("reward", pa.float64()),
                    ("model_version", pa.string()),
                    ("policy_version", pa.string()),
                ]
            ),
        ),
        ("trajectory_id", pa.string()),
    ]
)


def _reference(steps: list[StepEvent]) -> str | None:
    for s in reversed(steps):
        if isinstance(s.hidden_state, dict) and s.hidden_state.get(REFERENCE_KEY) is not None:
            return str(s.hidden_state[REFERENCE_KEY])
    return None


def verl_row(t: Trajectory, steps: list[StepEvent], index: int) -> dict[str, Any] | None:
    """One ``VERL_SCHEMA`` row for a trajectory version (None when it has no answered step)."""
    steps = sorted(steps, key=lambda s: s.step_index)
    answered = [s for s in steps if s.action.choices]
    if not answered:
        return None
    prompt = [{"role": m.role, "content": text_content(m.content) or ""} for m in context_before(steps, 0)]
    last = answered[-1]
    reference = _reference(steps)
    elig = t.governance.eligibility
    return {
        "data_source": DATA_SOURCE,
        "prompt": prompt,
        "ability": next((s.metadata.task_id for s in steps if s.metadata.task_id), None) or "chat",
        "reward_model": {"style": "rule" if reference is not None else "model", "ground_truth": reference},
        "extra_info": {
            "index": index,
            "split": "train",
            "trajectory_id": t.trajectory_id,
            "version": t.version,
            "tenant": t.tenant,
            "response": text_content(last.action.choices[0].message.content),
            "reward": t.reward,
            "model_version": last.metadata.model_version,
            "policy_version": elig.policy_version if elig else None,
        },
        "trajectory_id": t.trajectory_id,
    }
