"""End to end through the real embedded stack (broker, tiny-model policy server, proxy, stage workers, DuckDB
sink, `sluice train` in live mode): agents solve ``order_lookup`` in two model calls with real tool calls
(a forced ``lookup_order`` call, the tool's result sent back with the history, the answer), and the trainer
trains each trajectory as ONE merged sequence; the trajectory read back from DuckDB packs into a batch whose
tool-result tokens carry zero loss weight.
"""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import httpx
import pytest

from app.config import load_config
from app.up import running_stack
from pipeline.demo.summary import rows, wait_until
from pipeline.learn.agents import Attempt, TaskAgent
from pipeline.learn.tasks import OrderLookupTask
from sinks.clients import connect_client
from sluice.events import StepEvent, Trajectory, scoped_trajectory_id
from tests.system.conftest import live_trainer_config
from trainers.grpo.batch import pack
from trainers.live.extract import extract_samples
from trainers.samples import Sample
from trainers.tiny_model import build_tokenizer

pytestmark = pytest.mark.slow
KEY = "sk-sluice-acme"
TENANT = "acme"


def _config(tmp: Path) -> Path:
    return live_trainer_config(tmp)


async def _episodes(proxy: str, n: int) -> list[Attempt]:
    task = OrderLookupTask()
    agent = TaskAgent(proxy, KEY, "sluice-tiny", [task], temperature=1.0, arm="multi", seed=1)
    try:
        _, problem = agent.draw()
        return [await agent.attempt(task, problem, task_id="order-lookup-e2e") for _ in range(n)]
    finally:
        await agent.aclose()


def _stored(client, tid: str) -> Trajectory:  # noqa: ANN001
    sid = scoped_trajectory_id(TENANT, tid)
    head = rows(client, f"SELECT record FROM trajectory_versions WHERE trajectory_id = '{sid}' "
                        "ORDER BY version DESC LIMIT 1")[0]["record"]  # fmt: skip
    steps = rows(client, f"SELECT record FROM steps WHERE trajectory_id = '{sid}' ORDER BY step_index")
    traj = Trajectory.model_validate_json(head)
    return traj.model_copy(update={"steps": [StepEvent.model_validate_json(s["record"]) for s in steps]})


def test_a_tool_using_trajectory_trains_as_one_sequence_with_tool_results_out_of_the_loss(
    tmp_path: Path,
) -> None:
    path = _config(tmp_path)
    cfg = load_config(path)
    proxy = f"http://{cfg.proxy.host}:{cfg.proxy.port}"
    model = cfg.trainer.policy_servers[0]
    out_dir = cfg.path(cfg.trainer.output_dir)
    log = io.StringIO()
    with (
        running_stack(cfg, path, with_trainer=True, log_path=tmp_path / "up.log", sink=log),
        httpx.Client(timeout=30) as http,
    ):

        def fail(what: str) -> str:
            return f"{what}\n" + "\n".join(log.getvalue().splitlines()[-60:])

        attempts = asyncio.run(_episodes(proxy, 4))
        for a in attempts:  # the real tool protocol: a call to lookup_order, then a text answer
            assert a.model_calls == 2 and [c.name for c in a.tool_calls] == ["lookup_order"]
            assert json.loads(a.tool_calls[0].arguments)["order_id"]
        auth = {"Authorization": f"Bearer {KEY}"}
        for i, a in enumerate(attempts):  # the tiny model cannot solve it: the grades are posted as given
            r = http.post(f"{proxy}/v1/trajectories/{a.trajectory_id}/rewards", headers=auth,
                          json={"name": "checker", "value": float(i % 2)})  # fmt: skip
            assert r.status_code < 300, r.text
        try:
            wait_until(
                lambda: http.get(f"{model}/v1/policy").json()["serving_version"] == "1", 150, "v1 served"
            )
        except TimeoutError as err:
            raise AssertionError(fail(str(err))) from None
        wait_until(lambda: (out_dir / "metrics.jsonl").is_file(), 30, "the update's metrics")
        m = [json.loads(x) for x in (out_dir / "metrics.jsonl").read_text().splitlines()][-1]
        # four trajectories of two model calls each: four merged rows, eight model turns, no fallback
        assert m["samples"] == 4 and m["model_turns"] == 8 and m["merged_samples"] == 4, m
        assert m["multi_step_trajectories_total"] == 4 and m["merged_trajectories_total"] == 4
        assert m["fallback_steps_total"] == 0 and m["merged_trajectory_frac"] == 1.0

        client = connect_client(cfg.sink_settings(), None)
        try:
            traj = _stored(client, attempts[0].trajectory_id)
        finally:
            client.close()

    tok = build_tokenizer()
    item = extract_samples(traj, tok, ["sluice-tiny*"], 100_000)
    (s,) = item.samples
    assert s.merged_steps == 2 and item.merge["merged_trajectories"] == 1
    batch = pack([(s.prompt_ids, Sample(token_ids=s.token_ids, logprobs=s.logprobs, reward=0.0,
                                        loss_mask=s.loss_mask), 1.0, 1.0)], tok.pad_token_id)  # fmt: skip
    loss_w = batch.loss_mask[0].tolist()
    ids = batch.completion_ids[0].tolist()
    trained_ids = [t for t, w in zip(ids, loss_w, strict=True) if w == 1.0]
    context = tok.decode([t for t, w in zip(ids, loss_w, strict=True) if w == 0.0], skip_special_tokens=False)
    result = OrderLookupTask().run_tool("lookup_order", attempts[0].tool_calls[0].arguments)
    assert result in context and "<|im_start|>tool" in context  # the tool's result: attended, weight 0
    # the trained tokens are exactly what the model wrote: the call's arguments, then the answer
    written = [t for st in traj.steps for t in st.action.choices[0].token_ids or []]
    call_ids = traj.steps[0].action.choices[0].token_ids or []
    assert trained_ids == written and tok.decode(call_ids) == attempts[0].tool_calls[0].arguments
    assert result not in tok.decode(trained_ids, skip_special_tokens=False)
    assert batch.n_tokens == len(written)
    assert batch.completion_mask[0].sum() == len(s.token_ids)  # every token attended
