"""Erasure without a running sink: the command opens the file, publishes tombstones itself, rewrites
exports and lists checkpoints in its receipt."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch

from infra.broker import LocalBroker, free_port
from sinks.admin_key import ensure_admin_key
from sinks.batch import BatchTopics, PendingBatch
from sinks.clients import LocalStoreClient
from sinks.erasure_models import ErasureRequest
from sinks.erasure_receipt import register_export
from sinks.exceptions import AccessDenied, ErasureError, NotFound
from sinks.export.exporter import export, manifest_path
from sinks.flatten import SourceRecord
from sinks.settings import SinkSettings
from sinks.store import DuckDBStore
from sluice.events import encode
from sluice.rebuild_files import PLAN_FILE, plan_dir, rebuild_root
from testing.samples import make_trajectory
from tests.kafka_helpers import read_topic
from tests.sinks.helpers import ACME_KEY, GLOBEX_KEY, write_config
from tests.trainers.live.test_rebuild_plan import _row
from trainers.checkpoint import TrainerState, save_checkpoint
from trainers.live.rebuild_plan import RebuildPlan, read_plans, write_plan
from trainers.tiny_model import build_tiny


def _fill(cfg: SinkSettings) -> None:
    store = DuckDBStore(cfg.path(cfg.sink.database))
    b = PendingBatch(BatchTopics(cfg.topics.name("trajectories_audited"), cfg.topics.name("deadletter")))
    for i, (tid, tenant) in enumerate([("acme~a0", "acme"), ("acme~a1", "acme"), ("globex~g0", "globex")]):
        b.add(SourceRecord("audited", 0, i, tid, encode(make_trajectory(tid, tenant=tenant, reward=1.0))))
    store.write(b, cfg.sink.group_id)
    store.close()


def _count(cfg: SinkSettings, sql: str) -> int:
    return LocalStoreClient(cfg, ensure_admin_key(cfg)).query(sql).read_all().column(0)[0].as_py()


def test_tenant_keys_erase_only_their_own(broker: LocalBroker, tmp_path: Path) -> None:
    _, cfg = write_config(broker, tmp_path)
    _fill(cfg)
    with pytest.raises(AccessDenied, match="cannot erase another tenant"):
        LocalStoreClient(cfg, GLOBEX_KEY).erase(ErasureRequest(scope="tenant", target="acme"))
    with pytest.raises(NotFound, match="no trajectory globex~g0 for this key"):
        LocalStoreClient(cfg, ACME_KEY).erase(ErasureRequest(scope="trajectory", target="globex~g0"))
    # a bare id is the caller's own: acme's "g0" is not globex's trajectory, which stays
    own = LocalStoreClient(cfg, ACME_KEY).erase(ErasureRequest(scope="trajectory", target="g0"))
    assert own.target == "acme~g0" and sum(own.rows_deleted.values()) == 0
    assert _count(cfg, "SELECT count(*) FROM trajectories WHERE trajectory_id = 'globex~g0'") == 1
    result = LocalStoreClient(cfg, ACME_KEY).erase(
        ErasureRequest(scope="tenant", target="acme", requested_by="dpo")
    )
    assert result.status == "completed" and result.trajectories == 2 and result.tombstones == 4
    assert result.requested_by == "dpo (tenant:acme)"
    assert _count(cfg, "SELECT count(*) FROM trajectories") == 1
    got = read_topic(cfg.broker, cfg.topics.name("trajectories_audited"), expect=3, timeout_s=20)
    assert sorted(k for k, v in got if v is None) == [b"acme~a0", b"acme~a1", b"acme~g0"]
    places = {p.place: p for p in result.places}
    assert set(places) == {"duckdb", "topics", "stages", "proxy", "exports", "weights"}
    assert (
        places["weights"].removed == "no policy version was trained on them: nothing to roll back or rebuild"
    )
    assert "trajectory_versions" in places["duckdb"].removed and places["exports"].paths == []


def test_failed_publish_is_recorded_and_a_retry_completes(broker: LocalBroker, tmp_path: Path) -> None:
    _, cfg = write_config(broker, tmp_path)
    _fill(cfg)
    offline = cfg.model_copy(
        update={
            "broker": cfg.broker.model_copy(update={"bootstrap_servers": f"127.0.0.1:{free_port()}"}),
            "sink": cfg.sink.model_copy(update={"producer_timeout_s": 1.0}),
        }
    )
    with pytest.raises(ErasureError, match="publishing failed"):
        LocalStoreClient(offline, ensure_admin_key(cfg)).erase(
            ErasureRequest(scope="trajectory", target="acme~a1")
        )
    assert _count(cfg, "SELECT count(*) FROM trajectories WHERE trajectory_id = 'acme~a1'") == 0
    assert _count(cfg, "SELECT count(*) FROM erasures WHERE status = 'publish_failed'") == 1
    retry = LocalStoreClient(cfg, ensure_admin_key(cfg)).erase(
        ErasureRequest(scope="trajectory", target="acme~a1")
    )
    assert retry.status == "completed" and retry.tombstones == 2
    got = read_topic(cfg.broker, cfg.topics.name("trajectories_train"), expect=1, timeout_s=20)
    assert [k for k, v in got if v is None] == [b"acme~a1"]


def test_receipt_rewrites_exports_and_deletes_checkpoints_trained_on_them(
    broker: LocalBroker, tmp_path: Path
) -> None:
    _, cfg = write_config(broker, tmp_path)
    _fill(cfg)
    admin = ensure_admin_key(cfg)
    exports = {}
    for fmt in ("jsonl", "parquet"):
        out = tmp_path / "exports" / f"all.{fmt}"
        export(LocalStoreClient(cfg, admin), out, fmt, "SELECT * FROM trajectories")
        register_export(cfg, manifest_path(out))
        exports[fmt] = out
    # a checkpoint whose trainer state says it learned from acme~a1 (as the trainer writes it)
    model, tokenizer = build_tiny()
    state = TrainerState(step=3, taken_versions={"acme~a1": 1, "globex~g0": 1})
    ckpt = save_checkpoint(cfg.path(cfg.checkpoints_dir.parent), model, tokenizer, state)

    result = LocalStoreClient(cfg, ACME_KEY).erase(ErasureRequest(scope="trajectory", target="a1"))
    places = {p.place: p for p in result.places}
    assert sorted(places["exports"].paths) == sorted(str(p) for p in exports.values())
    assert "2 rows dropped from 2 export files" in places["exports"].removed
    # no lineage recorded it (a re-sampling trainer's checkpoint): deleted all the same, as trained on a1
    assert places["weights"].paths == [str(ckpt)] and not ckpt.exists()
    assert "1 checkpoints that trained on them deleted" in places["weights"].removed
    lines = [json.loads(line) for line in exports["jsonl"].read_text().splitlines()]
    assert sorted(r["trajectory_id"] for r in lines) == ["acme~a0", "globex~g0"]
    assert sorted(pq.read_table(exports["parquet"])["trajectory_id"].to_pylist()) == ["acme~a0", "globex~g0"]
    manifest = json.loads(manifest_path(exports["parquet"]).read_text())
    assert manifest["trajectory_ids"] == ["acme~a0", "globex~g0"] and manifest["rows"] == 2
    assert manifest["sha256"] == hashlib.sha256(exports["parquet"].read_bytes()).hexdigest()


def test_erasure_takes_the_erased_rows_out_of_a_pending_rebuild_plan(
    broker: LocalBroker, tmp_path: Path
) -> None:
    """A rebuild the live trainer left unpublished (its plan under the trainer's dir, resumed when the
    trainer restarts) is a copy of training data: the erasure drops the erased trajectory's rows from it
    while the trainer is down, and the receipt lists the plan."""
    _, cfg = write_config(broker, tmp_path)
    _fill(cfg)
    root = cfg.path(cfg.rebuild_dir)
    assert root == rebuild_root(cfg.path(cfg.checkpoints_dir.parent))  # where the trainer writes it
    plan = RebuildPlan(
        scope="acme", version=3, rebuilt_from="acme.1", rebuild_of=["acme.2", "acme.3"],
        batches=[[_row("acme~a0"), _row("acme~a1")], [_row("acme~a1", 1)]],
    )  # fmt: skip
    write_plan(root, plan, {"w": torch.zeros(2)})

    result = LocalStoreClient(cfg, ACME_KEY).erase(ErasureRequest(scope="trajectory", target="a1"))
    weights = {p.place: p for p in result.places}["weights"]
    assert str(plan_dir(root, "acme") / PLAN_FILE) in weights.paths
    assert "erased rows dropped from pending rebuild plans" in weights.removed
    [after] = read_plans(root)
    assert [[r.sample.trajectory_id for r in b] for b in after.batches] == [["acme~a0"], []]
    assert after.rows_erased == 2 and after.batches[0][0] == plan.batches[0][0]
