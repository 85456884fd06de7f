"""`sluice export` output trained on by the field's trainers: TRL's SFTTrainer and DPOTrainer, and verl's
RL dataset loading contract.

A real DuckDB store is filled with audited trajectories (the sink's own write path), `sluice export`
runs as a subprocess against it, and the files it writes go to the trainers as they are: a few steps of
the tiny local model each, on CPU. The feedback scenario: a retried answer, an edited answer, the
answers accepted for the same contexts, another tenant's accepted answer to the same question, and an
answer without feedback. verl's own ``RLHFDataset`` runs in a subprocess from ``var/verl``
(``infra/install.sh`` puts it there).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
import torch
import yaml

from sinks.batch import BatchTopics, PendingBatch
from sinks.export.preference import ACCEPTED, REJECTED
from sinks.flatten import SourceRecord
from sinks.store import DuckDBStore
from sluice.events import Reward, Trajectory, encode
from testing.samples import make_trajectory
from trainers.config import TinyModelConfig
from trainers.tiny_model import build_tiny

REPO = Path(__file__).resolve().parents[2]
ADMIN = "sk-test-admin"
TINY = TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1, intermediate_size=64)
T0 = datetime(2026, 11, 2, tzinfo=UTC)


def _feedback(t: Trajectory, step: int, kind: str, minute: int) -> None:
    t.steps[step].rewards.append(
        Reward(
            reward_id=f"{t.trajectory_id}-fb{step}-{minute}",
            name=kind,
            kind="feedback",
            source="user",
            step_index=step,
            created_at=T0 + timedelta(minutes=minute),
        )
    )


def _answer(t: Trajectory, step: int, text: str) -> None:
    t.steps[step].action.choices[0].message.content = text


def _scenario() -> list[Trajectory]:
    retried = make_trajectory("acme~retried", n_steps=1, reward=0.0)
    _answer(retried, 0, "Zero plus zero is a deep question.")
    _feedback(retried, 0, "retry", 1)
    again = make_trajectory("acme~again", n_steps=1, reward=1.0)  # the same question, asked again
    _feedback(again, 0, "accept", 2)
    edited = make_trajectory("acme~edited", n_steps=2, reward=0.5)
    _answer(edited, 1, "1 + 1 = 11.")
    _feedback(edited, 1, "thumbs_up", 3)  # the latest signal decides: the edit came after
    _feedback(edited, 1, "edit", 4)
    fine = make_trajectory("acme~fine", n_steps=2, reward=1.0)
    _feedback(fine, 1, "accept", 5)
    quiet = make_trajectory("acme~quiet", n_steps=1, reward=1.0)  # no feedback: no pair
    _answer(quiet, 0, "0 + 0 = 0, of course.")
    other = make_trajectory("globex~other", tenant="globex", n_steps=1, reward=1.0)
    _answer(other, 0, "Globex says 0.")
    _feedback(other, 0, "accept", 6)  # another tenant: never paired with acme's answers
    for t in (retried, again, edited, fine, quiet, other):
        t.steps[0].hidden_state = {"reference": "0"}
    return [retried, again, edited, fine, quiet, other]


@pytest.fixture(scope="module")
def config_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("exports")
    config = {
        "broker": {"embedded": False},
        "proxy": {"api_keys": [{"key": "sk-test-acme", "tenant": "acme"}]},
        "sink": {"database": str(root / "sluice.duckdb"), "query_port": 0, "admin_key": ADMIN},
    }
    path = root / "sluice.yaml"
    path.write_text(yaml.safe_dump(config))
    store = DuckDBStore(root / "sluice.duckdb")
    batch = PendingBatch(BatchTopics("audited", "deadletter"))
    for i, t in enumerate(_scenario()):
        batch.add(SourceRecord("audited", 0, i, t.trajectory_id, encode(t)))
    store.write(batch, "sluice-sink")
    store.close()
    return path


def sluice_export(config_path: Path, out: Path, *args: str) -> dict:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "app.cli",
            "export",
            "--config",
            str(config_path),
            "--out",
            str(out),
            *args,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(out.with_name(out.name + ".manifest.json").read_text())


def _tiny() -> tuple[torch.nn.Module, object]:
    torch.set_num_threads(1)
    model, tok = build_tiny(TINY)
    return model.train(), tok


def _changed(before: dict[str, torch.Tensor], model: torch.nn.Module) -> bool:
    return any(not torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_sft_trainer_trains_on_the_export(config_path: Path, tmp_path: Path) -> None:
    from trl import SFTConfig, SFTTrainer

    out = tmp_path / "sft.jsonl"
    manifest = sluice_export(config_path, out, "--format", "jsonl", "--query", "SELECT * FROM trajectories")
    assert manifest["layout"] == "rl" and manifest["trajectories"] == 6
    data = datasets.load_dataset("json", data_files=str(out), split="train").select_columns(["messages"])
    assert data[0]["messages"][0]["role"] == "system"
    model, tok = _tiny()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    args = SFTConfig(
        output_dir=str(tmp_path / "sft"), max_steps=3, per_device_train_batch_size=2, learning_rate=1e-3,
        logging_steps=1, save_strategy="no", report_to=[], use_cpu=True, bf16=False, disable_tqdm=True,
        max_length=512,
    )  # fmt: skip
    trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tok)
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert len(losses) == 3 and all(torch.isfinite(torch.tensor(losses)))
    assert _changed(before, trainer.model)


def test_dpo_pairs_follow_the_feedback_rule(config_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "prefs.parquet"
    manifest = sluice_export(
        config_path, out, "--layout", "dpo", "--format", "parquet", "--query", "SELECT * FROM trajectories"
    )
    rows = pq.read_table(out).to_pylist()
    pairs = {(r["trajectory_id"], r["step_index"], r["chosen_trajectory_id"]): r for r in rows}
    assert set(pairs) == {("acme~retried", 0, "acme~again"), ("acme~edited", 1, "acme~fine")}
    retry = pairs[("acme~retried", 0, "acme~again")]
    assert [m["content"] for m in retry["rejected"]] == ["Zero plus zero is a deep question."]
    assert [m["content"] for m in retry["chosen"]] == ["0 + 0 = 0."]
    assert [m["role"] for m in retry["prompt"]] == ["system", "user"]
    edit = pairs[("acme~edited", 1, "acme~fine")]
    assert edit["rejected_feedback"] == "edit" and edit["chosen_feedback"] == "accept"
    assert edit["rejected"][0]["content"] == "1 + 1 = 11." and edit["chosen"][0]["content"] == "1 + 1 = 2."
    assert len(edit["prompt"]) == 4 and edit["prompt"][-1]["role"] == "user"
    assert all(r["tenant"] == "acme" for r in rows)
    assert manifest["layout"] == "dpo" and manifest["rows"] == 2
    assert manifest["trajectory_ids"] == ["acme~again", "acme~edited", "acme~fine", "acme~retried"]
    assert ACCEPTED.isdisjoint(REJECTED)


def test_dpo_trainer_trains_on_feedback_pairs(config_path: Path, tmp_path: Path) -> None:
    from trl import DPOConfig, DPOTrainer

    out = tmp_path / "prefs.jsonl"
    sluice_export(config_path, out, "--layout", "dpo", "--query", "SELECT * FROM trajectories")
    data = datasets.load_dataset("json", data_files=str(out), split="train")
    data = data.select_columns(["prompt", "chosen", "rejected"])
    assert len(data) == 2
    model, tok = _tiny()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    args = DPOConfig(
        output_dir=str(tmp_path / "dpo"), max_steps=2, per_device_train_batch_size=2, learning_rate=1e-3,
        logging_steps=1, save_strategy="no", report_to=[], use_cpu=True, bf16=False, disable_tqdm=True,
        max_length=512,
    )  # fmt: skip
    reference, _ = build_tiny(TINY)  # the same seed: the policy's starting weights
    trainer = DPOTrainer(
        model=model, ref_model=reference, args=args, train_dataset=data, processing_class=tok
    )
    trainer.train()
    logged = [h for h in trainer.state.log_history if "loss" in h]
    assert len(logged) == 2 and all(torch.isfinite(torch.tensor([h["loss"] for h in logged])))
    assert _changed(before, trainer.model)


def test_verl_layout_loads_the_way_rlhf_dataset_reads_it(config_path: Path, tmp_path: Path) -> None:
    """verl's ``RLHFDataset`` loading contract, step by step with the libraries it uses (verl pins an
    older transformers, so it is not imported here; the next test runs verl's own class)."""
    out = tmp_path / "verl" / "train.parquet"
    manifest = sluice_export(
        config_path, out, "--layout", "verl", "--format", "parquet", "--query", "SELECT * FROM trajectories"
    )
    assert manifest["layout"] == "verl" and manifest["rows"] == 6
    # RLHFDataset._read_files_and_tokenize: datasets' parquet builder, split "train", files concatenated
    frame = datasets.concatenate_datasets([datasets.load_dataset("parquet", data_files=str(out))["train"]])
    assert {"data_source", "prompt", "ability", "reward_model", "extra_info"} <= set(frame.column_names)
    # maybe_filter_out_long_prompts: the chat template over prompt_key with a generation prompt
    _, tok = _tiny()
    max_prompt_length = 256
    kept = frame.filter(
        lambda doc: (
            len(tok.apply_chat_template(doc["prompt"], add_generation_prompt=True, tokenize=True))
            <= max_prompt_length
        )
    )
    assert len(kept) == 6
    # __getitem__: raw_prompt from the message list, index from extra_info, reward inputs
    for item in kept:
        text = tok.apply_chat_template(item["prompt"], add_generation_prompt=True, tokenize=False)
        assert text.endswith("<|im_start|>assistant\n") and "Question 0" in text
        assert all(set(m) == {"role", "content"} and isinstance(m["content"], str) for m in item["prompt"])
        assert isinstance(item["extra_info"]["index"], int) and item["data_source"] == "sluice"
        assert item["reward_model"] == {"style": "rule", "ground_truth": "0"}  # the recorded reference
        assert item["ability"] == "chat" and item["extra_info"]["split"] == "train"
    by_id = {r["extra_info"]["trajectory_id"]: r for r in kept}
    assert by_id["acme~retried"]["extra_info"]["response"] == "Zero plus zero is a deep question."
    assert by_id["acme~retried"]["extra_info"]["reward"] == 0.0
    assert sorted(r["extra_info"]["index"] for r in kept) == list(range(6))


VERL_DIR = REPO / "var" / "verl"


@pytest.mark.skipif(not (VERL_DIR / "verl").is_dir(), reason="verl not in var/verl (bash infra/install.sh)")
def test_verl_rlhf_dataset_reads_the_export(config_path: Path, tmp_path: Path) -> None:
    """verl's own RLHFDataset (the wheel, in its own folder: it pins an older transformers) loads it."""
    out = tmp_path / "verl.parquet"
    sluice_export(
        config_path, out, "--layout", "verl", "--format", "parquet", "--query", "SELECT * FROM trajectories"
    )
    done = subprocess.run(
        [sys.executable, str(REPO / "tests" / "sinks" / "verl_dataset_check.py"), str(out)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": f"{VERL_DIR}{os.pathsep}{REPO}"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    items = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(items) == 6
    for item in items:
        assert [m["role"] for m in item["raw_prompt"]] == ["system", "user"]
        assert item["data_source"] == "sluice"
        assert item["reward_model"] == {"style": "rule", "ground_truth": "0"}
    assert sorted(i["extra_info"]["index"] for i in items) == list(range(6))


def test_erasing_either_side_of_a_pair_drops_it(config_path: Path, tmp_path: Path) -> None:
    from sinks.export.rewrite import rewrite_without

    for fmt in ("jsonl", "parquet"):
        out = tmp_path / f"prefs.{fmt}"
        sluice_export(
            config_path, out, "--layout", "dpo", "--format", fmt, "--query", "SELECT * FROM trajectories"
        )
        manifest = out.with_name(out.name + ".manifest.json")
        assert rewrite_without(manifest, {"acme~again"}) == 1  # the chosen side of the retry pair
        assert rewrite_without(manifest, {"acme~edited"}) == 1  # the rejected side of the edit pair
        assert json.loads(manifest.read_text())["rows"] == 0
