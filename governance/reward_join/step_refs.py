"""A trajectory version as it goes onto one topic: its header referencing its steps, and only the step
records that topic does not hold yet. Pure: no Kafka.

    on_topic(trajectory, sent, step_payloads(trajectory, stored)) -> TopicEmission

``trajectory`` is the assembled version (``build_emission``: steps inline, with tool answers and step
rewards attached); ``stored`` the step bodies the join keeps (``event id -> (step, bytes as received)``);
``step_payloads`` gives each step's wire bytes and digest once per version, for every topic it goes to;
``sent`` is what one topic already holds (``event id -> digest``, from the join state). A step is sent when
the topic has no record of it or holds other content for it (assembly attached a late step reward or a
tool answer): a late trajectory-level reward sends the header only, so the bytes per version stay flat
as trajectories grow. A step whose assembled content is what was stored is sent as the stored bytes,
never encoded again. A version that carries no steps (content dropped) withdraws the step records the
topic holds: their keys get tombstones, as the trajectory's own key would have compacted them away in
the inline layout.
"""

from __future__ import annotations

from dataclasses import dataclass

from sluice.events import REFS_SCHEMA_VERSION, StepEvent, Trajectory, encode, encode_step_record
from sluice.events.trajectory import record_time
from sluice.step_refs import StepRef, StepsRef, chain_digest, step_digest


@dataclass(frozen=True)
class TopicEmission:
    """What one topic gets for a version, in order: tombstones (``withdrawn`` step ids), step records
    (``(step event id, record bytes)``), then ``header``; ``sent`` is what the topic holds afterwards."""

    header: Trajectory
    step_records: list[tuple[str, bytes]]
    withdrawn: list[str]
    sent: dict[str, str]


def step_bytes(assembled: StepEvent, stored: StepEvent, body: bytes) -> bytes:
    """The assembled step's wire bytes: the stored bytes when assembly attached nothing to it."""
    if len(assembled.rewards) == len(stored.rewards) and len(assembled.action_result.tool_results) == len(
        stored.action_result.tool_results
    ):
        return body
    return encode(assembled)


def totals(steps: list[StepEvent]) -> dict[str, object]:
    """Per-version sums the store shows without reading the steps (tokens, cost, models)."""
    costs = [s.metadata.cost_usd for s in steps if s.metadata.cost_usd is not None]
    gen = [s.metadata.gen_ai for s in steps]
    return {
        "input_tokens": sum(g.usage_input_tokens or 0 for g in gen),
        "output_tokens": sum(g.usage_output_tokens or 0 for g in gen),
        "cost_usd": sum(costs) if costs else None,
        "models": sorted({g.response_model or g.request_model for g in gen} - {None, ""}),
        "model_versions": sorted({s.metadata.model_version for s in steps} - {None, ""}),
    }


def step_payloads(
    trajectory: Trajectory, stored: dict[str, tuple[StepEvent, bytes]]
) -> list[tuple[StepEvent, bytes, str]]:
    """Each assembled step with its wire bytes and their digest, in step order: computed once per version
    and shared by the topics it goes to."""
    out: list[tuple[StepEvent, bytes, str]] = []
    for step in trajectory.steps:
        original, body = stored.get(step.event_id, (step, b""))
        data = step_bytes(step, original, body) if body else encode(step)
        out.append((step, data, step_digest(data)))
    return out


def on_topic(
    trajectory: Trajectory, sent: dict[str, str], payloads: list[tuple[StepEvent, bytes, str]]
) -> TopicEmission:
    """The records ``trajectory`` (assembled, steps inline) sends on a topic that holds ``sent``;
    ``payloads`` is ``step_payloads(trajectory, stored)``, shared by every topic the version goes to."""
    refs: list[StepRef] = []
    records: list[tuple[str, bytes]] = []
    added: list[StepRef] = []
    now_sent = dict(sent)
    created_at = record_time()  # one time for the records of one version on one topic
    for step, data, digest in payloads:
        ref = StepRef(event_id=step.event_id, digest=digest)
        refs.append(ref)
        if sent.get(step.event_id) != digest:
            records.append(
                (
                    step.event_id,
                    encode_step_record(
                        trajectory.trajectory_id,
                        trajectory.tenant,
                        trajectory.version,
                        step.event_id,
                        data,
                        digest,
                        created_at,
                    ),
                )
            )
            added.append(ref)
            now_sent[step.event_id] = digest
    withdrawn: list[str] = []
    if not trajectory.steps and sent:
        withdrawn, now_sent = sorted(sent), {}
    steps_ref = StepsRef(count=len(refs), digest=chain_digest(refs), added=added, **totals(trajectory.steps))
    header = trajectory.model_copy(
        update={"steps": [], "steps_ref": steps_ref, "schema_version": REFS_SCHEMA_VERSION}
    )
    return TopicEmission(header=header, step_records=records, withdrawn=withdrawn, sent=now_sent)
