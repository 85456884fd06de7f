"""Erasure reaches the weights, on the real stack: broker, tiny-model policy server, proxy, stage worker,
DuckDB sink and `sluice train` (live, ``trainer.promotion: direct`` so versions serve without waiting on
gates). A subject's trajectories train versions 1..k beside another subject's; the subject is erased.

Then, within a bounded time: no policy server holds or serves a tainted version, no pushed file or
checkpoint of one is on disk, the receipt's ``weights`` place lists the tainted versions, the rollback,
the discards and the deleted files, and the trainer rebuilds the line from the other subject's rows as a
new version (``rebuild_of`` in its lineage, no erased trajectory in it). The other subject's calls are
answered throughout.
"""

from __future__ import annotations

import ast
import io
import json
import re
import threading
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from app.commands.sink import echo_rebuilds
from app.config import SluiceConfig, load_config
from app.up import running_stack
from pipeline.demo.summary import wait_until
from pipeline.evolve.ledger_state import proposal_states, read_ledger
from sinks.clients import connect_client
from sinks.erasure_models import ErasureRequest
from sluice.events import scoped_trajectory_id
from tests.system.conftest import live_trainer_config

pytestmark = pytest.mark.slow
KEY, TENANT, TASK = "sk-sluice-acme", "acme", "erase-me"
RUN = uuid.uuid4().hex[:6]
SUBJECT, OTHER = f"subject-gone-{RUN}", f"subject-kept-{RUN}"


def _config(tmp: Path) -> Path:
    return live_trainer_config(
        tmp,
        trainer={"max_staleness": 8, "checkpoint_every": 1},
        live={"group_wait_s": 3, "update_samples": 8},
    )


def _call(http: httpx.Client, proxy: str, subject: str, reward: float | None) -> tuple[str, int]:
    tid = f"{subject[:12]}-{uuid.uuid4().hex[:8]}"
    headers = {"authorization": f"Bearer {KEY}", "x-sluice-trajectory-id": tid, "x-sluice-task-id": TASK,
               "x-sluice-subject-id": subject}  # fmt: skip
    body = {"model": "sluice-tiny", "messages": [{"role": "user", "content": "Say yes."}], "max_tokens": 4}
    resp = http.post(f"{proxy}/v1/chat/completions", json=body, headers=headers)
    if reward is not None and resp.status_code == 200:
        auth = {"authorization": f"Bearer {KEY}"}
        http.post(
            f"{proxy}/v1/trajectories/{tid}/rewards", headers=auth, json={"name": "score", "value": reward}
        )
        http.post(f"{proxy}/v1/trajectories/{tid}/end", headers=auth, json={"outcome": "done"})
    return tid, resp.status_code


def test_erasing_a_subject_removes_every_version_that_learned_from_it_and_rebuilds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _config(tmp_path)
    cfg: SluiceConfig = load_config(path)
    proxy = f"http://{cfg.proxy.host}:{cfg.proxy.port}"
    model = cfg.trainer.policy_servers[0]
    push_dir = cfg.path(cfg.trainer.output_dir) / "push"
    with (
        running_stack(cfg, path, with_trainer=True, log_path=tmp_path / "up.log", sink=io.StringIO()),
        httpx.Client(timeout=60) as http,
    ):
        gone: list[str] = []
        for i in range(8):  # both subjects' trajectories in every group: every version learns from both
            gone.append(_call(http, proxy, SUBJECT, float(i % 2))[0])
            _call(http, proxy, OTHER, float((i + 1) % 2))

        def policy() -> dict[str, Any]:
            return http.get(f"{model}/v1/policy").json()

        wait_until(lambda: policy()["serving_version"] not in ("", "0"), 180, "a trained version serving")
        trained = {v for v in policy()["versions"] if v != "0"}
        assert trained and any(push_dir.glob("policy-v*.safetensors"))

        # the other subject keeps calling while the erasure runs
        stop, codes = threading.Event(), []

        def keep_calling() -> None:
            with httpx.Client(timeout=60) as h:
                while not stop.is_set():
                    codes.append(_call(h, proxy, OTHER, None)[1])

        caller = threading.Thread(target=keep_calling, daemon=True)
        caller.start()
        client = connect_client(cfg.sink_settings(), None)
        try:
            wait_until(
                lambda: (
                    client.query("SELECT count(*) FROM policy_lineage").read_all().column(0)[0].as_py() > 0
                ),
                60,
                "lineage rows",
            )
            result = client.erase(ErasureRequest(scope="subject", target=SUBJECT, requested_by="test"))
        finally:
            client.close()
        weights = next(p for p in result.places if p.place == "weights")
        assert "tainted policy versions" in weights.removed and "rolled back" in weights.removed
        # every version the receipt names: those seen serving above, and any trained after that look
        listed = re.search(r"tainted policy versions (\[[^\]]*\])", weights.removed)
        assert listed is not None, weights.removed
        tainted = set(ast.literal_eval(listed.group(1)))
        assert set(weights.versions) == tainted  # what ``sluice erase --wait-rebuild`` waits on
        assert tainted and trained & tainted, weights.removed
        assert "out of its reach" in (weights.operator_action or "")
        # the policy server also forgot the text it kept of the subject's calls (its token history)
        forgot = re.search(
            r"token history of the erased calls dropped from server memory: (\d+)", weights.removed
        )
        assert forgot is not None and int(forgot.group(1)) >= 1, weights.removed

        # no server serves or holds a tainted version; no file of one is on disk
        status = policy()
        assert status["serving_version"] not in tainted and not tainted & set(status["versions"])
        on_disk = {p.name for p in push_dir.glob("policy-v*")}
        assert not {f"policy-v{v}.safetensors" for v in tainted} & on_disk
        for ckpt in (cfg.path(cfg.trainer.output_dir) / "checkpoints").glob("*/trainer_state.json"):
            assert str(yaml.safe_load(ckpt.read_text()).get("policy_version")) not in tainted

        # the trainer rebuilds the line without the subject: a new version, recorded with rebuild_of
        def rebuilt() -> list[Any]:
            states = proposal_states(read_ledger(cfg.broker, cfg.topics, 15)).values()
            return [s.proposal for s in states if s.proposal.lineage and s.proposal.lineage.rebuild_of]

        wait_until(lambda: bool(rebuilt()), 120, "the rebuilt version's proposal in the ledger")
        lineage = rebuilt()[0].lineage
        erased_ids = {scoped_trajectory_id(TENANT, t) for t in gone}
        assert lineage is not None and not erased_ids & {i.trajectory_id for i in lineage.items}
        assert lineage.rebuild_of and tainted <= set(lineage.rebuild_of) and lineage.items
        # a version the trainer published after the erasure read the ledger descends from a tainted one: the
        # trainer rebuilds it too, and withdraws it from the servers and disk itself
        later = set(lineage.rebuild_of) - tainted
        assert all(int(v) > max(map(int, tainted)) for v in later), (later, tainted)
        withdrawn = tainted | later
        # the trainer's record of the rebuild: the subject's rows were in the line and were left out
        metrics = cfg.path(cfg.trainer.output_dir) / "metrics.jsonl"

        def rebuild_lines() -> list[dict[str, Any]]:
            return [m for m in map(json.loads, metrics.read_text().splitlines()) if m.get("rebuilt_version")]

        wait_until(lambda: bool(rebuild_lines()), 60, "the rebuild's line in metrics.jsonl")
        rebuild = rebuild_lines()
        assert rebuild[0]["rebuild_rows_erased"] >= 1 and rebuild[0]["rebuilt_samples"] >= 1
        assert 0.0 <= rebuild[0]["rebuild_masked_frac_mean"] <= 1.0
        wait_until(lambda: policy()["serving_version"] == lineage.version, 60, "the rebuilt version serving")
        assert not withdrawn & set(policy()["versions"])
        assert not {f"policy-v{v}.safetensors" for v in withdrawn} & {
            p.name for p in push_dir.glob("policy-v*")
        }
        # the rest of the receipt, from the ledger: the tainted versions, the rebuilt one and its routing
        sql = f"SELECT * FROM erasure_rebuilds WHERE erasure_id = '{result.erasure_id}'"

        def rebuilds() -> list[dict[str, Any]]:
            reader = connect_client(cfg.sink_settings(), None)
            try:
                return [r for r in reader.query(sql).read_all().to_pylist() if r["outcome_kind"]]
            finally:
                reader.close()

        wait_until(lambda: bool(rebuilds()), 60, "the rebuild and its outcome in erasure_rebuilds")
        row = rebuilds()[0]
        assert set(row["tainted_versions"]) == tainted and row["rebuilt_version"] == lineage.version
        assert set(row["rebuild_of"]) == withdrawn and row["rebuilt_from"] == lineage.parent
        # what ``sluice erase --wait-rebuild`` prints after the receipt, from the same view
        capsys.readouterr()
        echo_rebuilds(cfg.sink_settings(), None, result.erasure_id, 30)
        printed = capsys.readouterr().out
        assert (
            f"rebuild: v{lineage.version} from v{lineage.parent} in place of {sorted(withdrawn)}" in printed
        )
        assert "gates: " in printed and "not decided yet" not in printed
        stop.set()
        caller.join(30)
        assert codes and set(codes) == {200}
