"""End to end through the real embedded stack (broker, tiny-model policy server, proxy, stage workers, DuckDB
sink) with `sluice train` in live mode as its own process: proxied calls grouped by the agent's task id,
rewards through the proxy's API, one update from the recorded tokens, the policy server serving the
pushed version, the next proxied step recording it, and DuckDB grouping steps by policy version.

The tiny model keeps it fast; the same path runs SmolLM2-135M-Instruct (``trainer.model``).
"""

from __future__ import annotations

import io
import json
import uuid
from pathlib import Path

import httpx
import openai
import pytest

from app.config import load_config
from app.up import running_stack
from pipeline.demo.summary import rows, wait_until
from sinks.clients import connect_client
from sluice.events import scoped_trajectory_id
from tests.system.conftest import live_trainer_config
from trainers.live.policy_state import read_policy_state

pytestmark = pytest.mark.slow
KEY = "sk-sluice-acme"
TENANT = "acme"  # the tenant KEY maps to in the shipped config
TASK = "add-two-numbers"


def _config(tmp: Path) -> Path:
    return live_trainer_config(tmp)


def _call(proxy: str, tid: str) -> str:
    client = openai.OpenAI(base_url=f"{proxy}/v1", api_key=KEY, max_retries=0)
    raw = client.chat.completions.with_raw_response.create(
        model="sluice-tiny",
        messages=[{"role": "user", "content": "2+3="}],
        max_tokens=6,
        temperature=1.0,
        extra_headers={"x-sluice-trajectory-id": tid, "x-sluice-task-id": TASK},
    )
    return raw.parse().choices[0].message.content or ""


def _reward_and_end(http: httpx.Client, proxy: str, tid: str, value: float) -> None:
    auth = {"Authorization": f"Bearer {KEY}"}
    r = http.post(
        f"{proxy}/v1/trajectories/{tid}/rewards", headers=auth, json={"name": "correct", "value": value}
    )
    assert r.status_code < 300, r.text
    r = http.post(f"{proxy}/v1/trajectories/{tid}/end", headers=auth, json={"outcome": "done"})
    assert r.status_code < 300, r.text


def test_live_traffic_trains_the_policy_that_serves_it(tmp_path: Path) -> None:
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

        # four attempts at one task, served by the base weights ("0"); the grader's rewards differ
        first = [f"live-{uuid.uuid4().hex[:8]}" for _ in range(4)]
        for i, tid in enumerate(first):
            _call(proxy, tid)
            _reward_and_end(http, proxy, tid, 1.0 if i % 2 == 0 else 0.0)

        def serving() -> str:
            return http.get(f"{model}/v1/policy").json()["serving_version"]

        try:
            wait_until(lambda: serving() == "1", 150, "the policy server to serve v1")
        except TimeoutError as err:
            raise AssertionError(fail(str(err))) from None
        history = http.get(f"{model}/v1/policy").json()["history"]
        assert [h["version"] for h in history if h["action"] == "update"] == ["1"]

        # the learner records the push once every server has answered it: right after the server swaps
        def pushed() -> bool:
            state = read_policy_state(out_dir)
            return state is not None and state.policy_version == 1 and state.last_push_version == 1

        wait_until(pushed, 30, "the learner to record its push of v1")
        metrics = [json.loads(x) for x in (out_dir / "metrics.jsonl").read_text().splitlines()]
        m = metrics[-1]
        assert m["mode"] == "live" and m["policy_version"] == 1 and m["pushed_servers"] == 1
        assert m["samples"] == 4 and m["grouped_samples_total"] == 4 and m["retokenized_total"] == 0
        assert m["staleness_max"] == 0 and m["dropped_stale_total"] == 0
        assert m["reward_to_serving_s_p50"] is not None and m["reward_to_serving_s_p50"] > 0

        # the next proxied step is served by, and records, the new version
        nxt = f"live-{uuid.uuid4().hex[:8]}"
        _call(proxy, nxt)
        _reward_and_end(http, proxy, nxt, 1.0)

        client = connect_client(cfg.sink_settings(), None)
        try:
            # stored under the tenant-scoped id (``acme~live-...``)
            ids = ", ".join(f"'{scoped_trajectory_id(TENANT, t)}'" for t in [*first, nxt])
            sql = (
                "SELECT model_version, count(*) AS steps FROM steps "
                f"WHERE trajectory_id IN ({ids}) GROUP BY model_version ORDER BY model_version"
            )
            try:
                wait_until(lambda: len(rows(client, sql)) == 2, 90, "steps of both versions in DuckDB")
            except TimeoutError as err:
                raise AssertionError(fail(f"{err}: {rows(client, sql)}")) from None
            assert rows(client, sql) == [
                {"model_version": "0", "steps": 4},
                {"model_version": "1", "steps": 1},
            ]
        finally:
            client.close()
