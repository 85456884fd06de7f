"""The trainer and the model server on a CUDA GPU, checked against the same work on the CPU (skips without
CUDA, like the vLLM tests): logprobs, a learner update, rollouts, the live learner, the serving engine with a
constrained tool call, embeddings and a weight swap from CPU tensors."""

from __future__ import annotations

import asyncio
import json

import pytest
import torch
from safetensors.torch import load_file

from app.config import parse_config
from testing.live_steps import step, trajectory
from testing.toy_traffic import make_trajectories
from trainers.actors.learner import Learner
from trainers.actors.rollout_worker import RolloutWorker
from trainers.checkpoint import TrainerState
from trainers.config import TaskConfig, TrainerConfig
from trainers.generation import GenRequest, generate, sequence_logprobs
from trainers.grpo.batch import logprobs_of, pack
from trainers.live.extract import extract_samples
from trainers.live.learner import LiveLearner
from trainers.live.samples import LiveRow
from trainers.live.weight_push import WeightPush
from trainers.samples import Sample
from trainers.task_builder import build_training_task
from trainers.tasks.registry import build_task
from trainers.tiny_model import build_tiny, build_tokenizer
from trainers.weight_sync.in_process import InProcessWeightSync

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

TASK = {"kind": "reverse_digits", "max_digits": 2, "reward": {"kind": "exact_match"}}
TOK = build_tokenizer()


def _settings(**trainer: object):  # noqa: ANN202 - TrainerSettings
    return parse_config(
        {"trainer": {"task": TASK, "group_size": 4, "tasks_per_step": 4, "max_new_tokens": 4, **trainer}}
    ).trainer_settings()


def _tasks(n: int) -> list:
    task = build_task(TaskConfig(**TASK))
    return [
        build_training_task(t, task, TOK, ["sluice-tiny*"], 512)
        for t in make_trajectories(n, TaskConfig(**TASK), seed=4, logged_correct=1.0)
    ]


def _signal(groups: list) -> list:
    """Every group with variance: half its members rewarded."""
    return [
        g.model_copy(update={"samples": [s.model_copy(update={"reward": float(i % 2)}) for i, s in enumerate(g.samples)]})
        for g in groups
    ]  # fmt: skip


def test_completion_logprobs_on_cuda_match_the_cpu() -> None:
    model, _ = build_tiny()
    rows = [([5, 6, 7], Sample(token_ids=[8, 9, 10, 11], logprobs=None, reward=1.0), 1.0, 1.0),
            ([5, 6, 7], Sample(token_ids=[12], logprobs=None, reward=0.0), -1.0, 1.0),
            ([3, 4], Sample(token_ids=[13, 14], logprobs=None, reward=0.0), 0.5, 1.0)]  # fmt: skip
    batch = pack(rows, TOK.pad_token_id)
    with torch.no_grad():
        cpu = logprobs_of(model, batch, 0.7)
        gpu = logprobs_of(model.to("cuda"), batch.to("cuda"), 0.7)
    assert gpu.device.type == "cuda"
    assert torch.allclose(gpu.cpu(), cpu, atol=1e-4)


def test_a_learner_update_on_cuda_matches_the_cpu_one_and_reaches_the_rollout_worker() -> None:
    """Same seed, same groups: the CUDA learner's loss and statistics equal the CPU learner's, and the
    weights it publishes are what the (CPU) rollout worker then samples with."""
    cfg = _settings(include_logged=False)
    cpu_sync, gpu_sync = InProcessWeightSync(), InProcessWeightSync()
    cpu_learner = Learner(cfg, "sluice-tiny", cpu_sync, start_version=2)
    gpu_learner = Learner(cfg, "sluice-tiny", gpu_sync, start_version=2, device="cuda")
    assert next(gpu_learner.model.parameters()).device.type == "cuda"
    worker = RolloutWorker(cfg, "hf", "sluice-tiny", cpu_sync)
    groups = _signal(worker.rollout(_tasks(4), seed=3).groups)
    before = {k: v.detach().cpu().clone() for k, v in gpu_learner.model.state_dict().items()}
    a, b = cpu_learner.train_step(groups), gpu_learner.train_step(groups)
    assert a["updated"] and b["updated"] and a["policy_version"] == b["policy_version"] == 3
    for key in ("loss", "clip_frac", "masked_frac", "ratio_mean"):
        assert b[key] == pytest.approx(a[key], rel=1e-3, abs=1e-5), key
    assert b["grad_norm"] == pytest.approx(a["grad_norm"], rel=1e-3)
    after = gpu_learner.model.state_dict()
    moved = sum(int(not torch.equal(before[k], after[k].cpu())) for k in before)
    assert moved > len(before) // 2  # the update reached most tensors
    worker_gpu = RolloutWorker(cfg, "hf", "sluice-tiny", gpu_sync, device="cuda")
    assert worker_gpu.sync_weights() == 3 and worker_gpu.info()["device"].startswith("cuda")
    served = worker_gpu.backend.model.state_dict()
    assert all(torch.equal(served[k].cpu(), after[k].cpu()) for k in after)


def test_rollouts_on_cuda_report_the_logprobs_the_cpu_model_gives() -> None:
    cfg = _settings(include_logged=False)
    worker = RolloutWorker(cfg, "hf", "sluice-tiny", InProcessWeightSync(), device="cuda")
    res = worker.rollout(_tasks(3), seed=5)  # seeded: drawn on the CPU generator from the GPU's probabilities
    cpu_model, _ = build_tiny()
    checked = 0
    for g in res.groups:
        for s in g.samples:
            if s.token_ids:
                expected = sequence_logprobs(cpu_model, g.prompt_ids, s.token_ids, temperature=1.0)
                assert s.logprobs == pytest.approx(expected, abs=1e-3)
                checked += 1
    assert checked >= 6 and res.generated_tokens > 0


def test_greedy_decoding_on_cuda_equals_the_cpu() -> None:
    model, _ = build_tiny()
    prompts = [[5, 6, 7, 8], [9, 10], [5, 6, 7, 8]]
    reqs = lambda: [GenRequest(p, 6, temperature=0.0) for p in prompts]  # noqa: E731
    cpu = generate(model, reqs(), TOK.pad_token_id)
    gpu = generate(model.to("cuda"), reqs(), TOK.pad_token_id)
    assert [r.token_ids for r in gpu] == [r.token_ids for r in cpu]
    for c, g in zip(cpu, gpu, strict=True):
        assert g.logprobs == pytest.approx(c.logprobs, abs=1e-4)


def test_the_live_learner_trains_on_cuda_and_pushes_cpu_tensors(tmp_path) -> None:
    prompt = TOK("<|im_start|>user\n2+2=<|im_end|>\n<|im_start|>assistant\n", add_special_tokens=False)[
        "input_ids"
    ]
    good = TOK("4", add_special_tokens=False)["input_ids"] + [TOK.eos_token_id]
    bad = TOK("5", add_special_tokens=False)["input_ids"] + [TOK.eos_token_id]
    model, _ = build_tiny()
    rows = []
    for i, (ids, adv) in enumerate([(good, 1.0), (bad, -1.0)] * 4):
        traj = trajectory([step(0, prompt, ids, logprobs=sequence_logprobs(model, prompt, ids))], tid=f"t{i}")
        rows.append(LiveRow(sample=extract_samples(traj, TOK, ["*"], 1000).samples[0], advantage=adv))
    learner = LiveLearner(
        TrainerConfig(learning_rate=3e-3, live={"push_weights": False, "ppo_minibatches": 2}),
        "sluice-tiny", str(tmp_path), device="cuda",
    )  # fmt: skip

    def margin() -> float:
        return sum(sequence_logprobs(learner.model, prompt, good)) - sum(
            sequence_logprobs(learner.model, prompt, bad)
        )

    before = margin()
    for _ in range(3):
        m = learner.train(rows)
    after = margin()
    assert after > before + 0.5 and m["policy_version"] == 3
    saved = learner.save(str(tmp_path / "ckpt"), TrainerState(step=3))
    again = LiveLearner(TrainerConfig(live={"push_weights": False}), saved, str(tmp_path), resume_from=saved)
    resumed = again.model.state_dict()
    assert all(torch.equal(resumed[k], v.cpu()) for k, v in learner.model.state_dict().items())
    written = WeightPush([], "file", 5.0, tmp_path / "push").write_file(learner.pushed_tensors(), "3")
    assert all(t.device.type == "cpu" for t in load_file(str(written)).values())


SCHEMA = {
    "type": "object",
    "properties": {
        "priority": {"type": "string", "enum": ["low", "high"]},
        "date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
        "count": {"type": "integer"},
    },
    "required": ["priority", "date", "count"],
}


def test_a_forced_tool_call_decodes_on_cuda_within_its_schema() -> None:
    from trainers.serving.grammar import SchemaConstraint, arguments_grammar

    model, tok = build_tiny()
    model = model.to("cuda")
    ids = tok("book it", add_special_tokens=False)["input_ids"]
    for seed in range(3):
        c = SchemaConstraint(arguments_grammar(SCHEMA), tok)
        req = GenRequest(
            ids, 120, temperature=1.0, constraint=c, generator=torch.Generator().manual_seed(seed)
        )
        res = generate(model, [req], tok.pad_token_id)[0]
        assert res.finish_reason == "stop" and c.done and not c.stuck, c.text
        args = json.loads(c.text)
        assert args["priority"] in ("low", "high") and type(args["count"]) is int


def test_the_serving_engine_on_cuda_embeds_and_swaps_in_cpu_weights() -> None:
    from trainers.serving.engine import GenerateEngine
    from trainers.serving.model_io import embed
    from trainers.serving.policy_store import PolicyStore
    from trainers.serving.protocol import EmbeddingRequest

    model, tok = build_tiny()
    model = model.to("cuda")
    store = PolicyStore(model, "sluice-tiny")
    engine = GenerateEngine(model, tok, max_batch=4, versions=store).start()
    try:
        reply = asyncio.run(
            embed(engine, EmbeddingRequest(model="sluice-tiny", input=["hello", "world"]), 512)
        )
        vecs = [d["embedding"] for d in reply["data"]]
        assert len(vecs) == 2 and abs(sum(x * x for x in vecs[0]) - 1.0) < 1e-4
        cpu_model, _ = build_tiny()
        update = {k: v * 0.5 for k, v in cpu_model.state_dict().items() if k.endswith("q_proj.weight")}
        store.apply(store.prepare_update("1", update))
        swapped = dict(model.named_parameters())
        name = next(iter(update))
        assert swapped[name].device.type == "cuda" and torch.equal(swapped[name].cpu(), update[name])
        assert store.serving == "1"
    finally:
        engine.stop()
