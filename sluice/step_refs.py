"""How a trajectory version names its steps on the output topics: keys, digests, references. Pure.

A version of layout 2.0 (``sluice.events.REFS_SCHEMA_VERSION``) carries ``StepsRef`` instead of its steps;
each step travels as its own record keyed ``step_record_key`` on the trajectory's partition, identified
by ``step_digest`` of its bytes, and ``chain_digest`` covers a version's references in step order.
``compact_step_reasons`` keeps the per-step reasons of a version's header flat as trajectories grow.

    pytest tests/governance/reward_join/test_step_refs.py
"""

from __future__ import annotations

import hashlib
import re

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


STEP_DIGEST_HEX = 16
"""Hex digits of a step digest (64 bits: tells a changed step apart, not a security boundary)."""
STEP_KEY_SEP = "#"
"""Separates a trajectory id from a step's event id in a step record's key (ids never contain it)."""


def step_digest(body: bytes) -> str:
    """Digest of a step's stored bytes (its wire JSON as shipped)."""
    return hashlib.sha256(body).hexdigest()[:STEP_DIGEST_HEX]


def step_record_key(trajectory_id: str, step_event_id: str) -> str:
    """The key of a step record on the audited and train topics: its own key, so a compacted topic keeps it
    beside the trajectory's header (keyed by the trajectory id); it is sent to the header's partition."""
    return f"{trajectory_id}{STEP_KEY_SEP}{step_event_id}"


_STEP_KEY_SEP_BYTES = STEP_KEY_SEP.encode()


def is_step_record_key(key: str | bytes | None) -> bool:
    """Whether a record key is a step record's (``step_record_key``) rather than a trajectory header's; a
    record without a key is neither. Takes the key as consumed (bytes) or decoded (str)."""
    if key is None:
        return False
    return (_STEP_KEY_SEP_BYTES if isinstance(key, bytes) else STEP_KEY_SEP) in key


def key_trajectory_id(key: str) -> str:
    """The trajectory id a record key names (a header's key is the id, a step record's starts with it)."""
    return key.partition(STEP_KEY_SEP)[0]


class StepRef(_Model):
    event_id: str
    digest: str = Field(description="step_digest of the step record's step bytes.")


def chain_digest(refs: list[StepRef]) -> str:
    """One digest over a version's step references in step order: a reader checks it holds exactly them."""
    h = hashlib.sha256()
    for ref in refs:
        h.update(f"{ref.event_id}:{ref.digest};".encode())
    return h.hexdigest()[:32]


class StepsRef(_Model):
    """A version's steps by reference. Flat in size: ``added`` names only the step records sent with this
    version on its topic (new steps, or steps whose assembled content changed), ``count`` and ``digest``
    cover all of them; the totals are what the store shows per version without reading the steps."""

    count: int = Field(0, ge=0)
    digest: str = Field("", description="chain_digest of every step's reference, in step order.")
    added: list[StepRef] = Field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    models: list[str] = Field(default_factory=list)
    model_versions: list[str] = Field(default_factory=list)


_STEP_SUFFIX = re.compile(r"^(.*[:@])(\d+)$")


def compact_step_reasons(reasons: list[str]) -> list[str]:
    """Reasons that name a step (``<reason>:<step>`` or ``<reason>@<step>``) merged per reason into step
    ranges, ``sampling_stochastic:0-49`` or ``side_effect:search@2,5-7``, in first-seen order; others as
    they are. A trajectory-level field then stays flat as trajectories grow."""
    steps: dict[str, list[int]] = {}
    for reason in reasons:
        m = _STEP_SUFFIX.match(reason)
        key, index = (m.group(1), int(m.group(2))) if m else (reason, None)
        found = steps.setdefault(key, [])
        if index is not None:
            found.append(index)
    out: list[str] = []
    for key, indexes in steps.items():
        if not indexes:
            out.append(key)
            continue
        runs: list[str] = []
        ordered = sorted(set(indexes))
        start = prev = ordered[0]
        for i in [*ordered[1:], None]:
            if i is not None and i == prev + 1:
                prev = i
                continue
            runs.append(str(start) if start == prev else f"{start}-{prev}")
            if i is not None:
                start = prev = i
        out.append(key + ",".join(runs))
    return out
