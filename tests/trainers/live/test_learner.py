"""The live learner on the tiny model, in this process: an update moves the policy toward positive-advantage
completions and counts the version; LoRA pushes the merged matrices under the served model's names."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from testing.live_steps import step, trajectory
from trainers.config import TrainerConfig
from trainers.generation import sequence_logprobs
from trainers.live.extract import extract_samples
from trainers.live.learner import LiveLearner
from trainers.live.samples import LiveRow
from trainers.tiny_model import build_tiny, build_tokenizer

TOK = build_tokenizer()
PROMPT = TOK("<|im_start|>user\n2+2=<|im_end|>\n<|im_start|>assistant\n", add_special_tokens=False)[
    "input_ids"
]
GOOD = TOK("4", add_special_tokens=False)["input_ids"] + [TOK.eos_token_id]
BAD = TOK("5", add_special_tokens=False)["input_ids"] + [TOK.eos_token_id]


def rows(logprobs: bool = True) -> list[LiveRow]:
    model, _ = build_tiny()
    out = []
    for i, (ids, adv) in enumerate([(GOOD, 1.0), (BAD, -1.0)] * 4):
        lp = sequence_logprobs(model, PROMPT, ids) if logprobs else None
        traj = trajectory([step(0, PROMPT, ids, logprobs=lp)], tid=f"t{i}")
        out.append(LiveRow(sample=extract_samples(traj, TOK, ["*"], 1000).samples[0], advantage=adv))
    return out


def config(**live: object) -> TrainerConfig:
    return TrainerConfig(learning_rate=3e-3, live={"push_weights": False, "default_scope": "shared", **live})


def test_an_update_raises_the_positive_completion_and_counts_the_version(tmp_path) -> None:
    learner = LiveLearner(config(), "sluice-tiny", str(tmp_path))
    before = sum(sequence_logprobs(learner.model, PROMPT, GOOD)) - sum(
        sequence_logprobs(learner.model, PROMPT, BAD)
    )
    batch = rows()
    first = learner.train(batch)
    assert first["masked_frac"] == 0.0  # recorded by the same weights: training and inference agree
    for _ in range(2):
        m = learner.train(batch)
    after = sum(sequence_logprobs(learner.model, PROMPT, GOOD)) - sum(
        sequence_logprobs(learner.model, PROMPT, BAD)
    )
    assert after > before + 0.5
    assert m["updated"] and m["policy_version"] == 3 and learner.get_version() == 3
    assert m["trained_samples"] == 8
    assert m["masked_frac"] > first["masked_frac"]  # the record is now 2 versions old: IcePop masks tokens


def test_minibatches_use_the_proximal_policy_and_missing_behaviour_logprobs_fall_back_to_it(tmp_path) -> None:
    learner = LiveLearner(config(ppo_minibatches=2), "sluice-tiny", str(tmp_path))
    m = learner.train(rows(logprobs=False))
    assert m["updated"] and m["policy_version"] == 1
    assert m["behaviour_weight_mean"] == 1.0 and m["masked_frac"] == 0.0


def test_a_rebuild_replays_an_update_as_it_was_made_not_weighed_against_the_sampling_policy(tmp_path) -> None:
    """Rows sampled by a policy far from the learner's (their recorded logprobs shifted): a live update
    masks and weighs their tokens; the replay of an update an erasure rebuilds does neither."""
    far = [
        r.model_copy(
            update={
                "sample": r.sample.model_copy(update={"logprobs": [lp - 2.0 for lp in r.sample.logprobs]})
            }
        )
        for r in rows()
    ]
    live = LiveLearner(config(), "sluice-tiny", str(tmp_path / "live")).train(far)
    assert live["masked_frac"] > 0.5  # pi_prox / pi_behav = e**2 > mask_high
    replayed = LiveLearner(config(), "sluice-tiny", str(tmp_path / "replay")).train(far, replay=True)
    assert replayed["masked_frac"] == 0.0 and replayed["behaviour_weight_mean"] == 1.0
    assert replayed["updated"] and replayed["grad_norm"] > 0


def test_lora_pushes_merged_matrices_named_as_the_served_model(tmp_path) -> None:
    learner = LiveLearner(
        config(lora_rank=4, lora_targets=["q_proj", "v_proj"]), "sluice-tiny", str(tmp_path)
    )
    base, _ = build_tiny()
    served = base.state_dict()
    start = learner.pushed_tensors()
    assert start and all(n in served and served[n].shape == t.shape for n, t in start.items())
    assert all(n.endswith(("q_proj.weight", "v_proj.weight")) for n in start)
    assert all(torch.equal(t, served[n]) for n, t in start.items())  # B = 0 at start: the base weights
    learner.train(rows())
    learner.train(rows())
    moved = learner.pushed_tensors()
    assert any(not torch.allclose(t, served[n]) for n, t in moved.items())
    trainable = sum(p.numel() for p in learner.model.parameters() if p.requires_grad)
    assert trainable < 0.1 * sum(p.numel() for p in base.parameters())


def test_a_checkpoint_resumes_weights_and_version_full_and_lora(tmp_path) -> None:
    from trainers.checkpoint import TrainerState, read_state

    for name, live in (("full", {}), ("lora", {"lora_rank": 4})):
        learner = LiveLearner(config(**live), "sluice-tiny", str(tmp_path / name))
        learner.train(rows())
        path = learner.save(str(tmp_path / name), TrainerState(step=1))
        assert read_state(Path(path)).policy_version == 1
        source = "sluice-tiny" if live else path  # LoRA checkpoints hold the adapters: the base loads by name
        again = LiveLearner(config(**live), source, str(tmp_path / name), start_version=1, resume_from=path)
        assert again.get_version() == 1
        for n, t in learner.pushed_tensors().items():
            assert torch.allclose(t, again.pushed_tensors()[n]), (name, n)


def test_each_learning_scope_trains_its_own_weights_and_version_line(tmp_path) -> None:
    learner = LiveLearner(
        config(default_scope="own", lora_rank=4, lora_targets=["q_proj", "v_proj"]),
        "sluice-tiny",
        str(tmp_path),
    )
    base = {n: t.clone() for n, t in learner.pushed_tensors().items()}
    acme = rows()  # the builders' trajectories belong to tenant acme
    m = learner.train(acme, "acme")
    assert m["scope"] == "acme" and m["version_name"] == "acme.1" and m["parent_version"] == "0"
    assert learner.get_versions() == {"shared": 0, "acme": 1} and learner.get_version() == 0
    moved = learner.pushed_tensors()  # the acme line is active: its weights moved
    assert any(not torch.allclose(moved[n], base[n]) for n in base)
    learner.bank.activate("shared")  # the shared line never saw acme's rows: still the base weights
    assert all(torch.equal(t, base[n]) for n, t in learner.pushed_tensors().items())
    learner.bank.activate("acme")
    assert all(torch.equal(t, moved[n]) for n, t in learner.pushed_tensors().items())
    globex = [r.model_copy(update={"sample": r.sample.model_copy(update={"tenant": "globex"})}) for r in acme]
    with pytest.raises(ValueError, match="globex"):  # a tenant's rows never train another tenant's line
        learner.train(globex, "acme")
    with pytest.raises(ValueError, match="acme"):  # nor the shared one, when the tenant trains its own
        learner.train(acme, "shared")


def test_a_direct_line_keeps_its_newest_version_and_parent_on_the_servers(tmp_path) -> None:
    """Direct promotion with a tenant's own line: every version is pushed as a candidate its tenant is
    routed to, which the server never evicts; the learner takes superseded ones off, so a line longer than
    the server's room keeps being served (here 6 versions on a server that holds 4)."""
    from tests.trainers.serving.serve_process import serve_model

    with serve_model(tmp_path / "serve", extra={"max_versions": 4, "keep_versions": 1}) as srv:
        tcfg = TrainerConfig(
            learning_rate=3e-3, promotion="direct", policy_servers=[srv.url],
            live={"push_weights": True, "default_scope": "own", "lora_rank": 4, "lora_targets": ["q_proj", "v_proj"]},
        )  # fmt: skip
        learner = LiveLearner(tcfg, "sluice-tiny", str(tmp_path / "trainer"))
        for n in range(1, 7):
            learner.train(rows(), "acme")
            pushed = learner.publish("acme")
            assert pushed["push_errors"] == 0 and pushed["push_role"] == "candidate"
            assert pushed["discarded_superseded"] == ([f"acme.{n - 2}"] if n > 2 else [])
        held = learner.push.statuses()[srv.url].versions
        assert {"acme.5", "acme.6"} <= set(held) and not {f"acme.{n}" for n in range(1, 5)} & set(held)


def test_a_rebuild_withdraws_its_tainted_versions_from_the_servers_and_disk(tmp_path) -> None:
    """Versions an erasure tainted that only the trainer knows of (published after the erasure read the
    ledger): the server serving one goes back to the untainted fallback it holds, each is discarded, and
    its pushed file deleted."""
    from tests.trainers.serving.serve_process import serve_model

    with serve_model(tmp_path / "serve") as srv:
        tcfg = TrainerConfig(
            learning_rate=3e-3, promotion="direct", policy_servers=[srv.url],
            live={"push_weights": True, "default_scope": "shared", "lora_rank": 4, "keep_push_files": 4},
        )  # fmt: skip
        learner = LiveLearner(tcfg, "sluice-tiny", str(tmp_path / "trainer"))
        for _ in range(3):
            learner.train(rows(), "shared")
            assert learner.publish("shared")["push_errors"] == 0
        status = learner.push.statuses()[srv.url]
        assert status.serving_version == "3" and {"1", "2", "3"} <= set(status.versions)
        out = learner.withdraw(["2", "3"], ["1", "0"])
        status = learner.push.statuses()[srv.url]
        assert status.serving_version == "1" and not {"2", "3"} & set(status.versions)
        assert out["held"] == [] and out["rolled_back"] == [f"{srv.url} 3 -> 1"]
        assert sorted(Path(f).name for f in out["files_deleted"]) == [
            "policy-v2.safetensors",
            "policy-v3.safetensors",
        ]
        assert [p.name for p in (tmp_path / "trainer" / "push").glob("policy-v*")] == [
            "policy-v1.safetensors"
        ]


def test_kl_to_the_base_keeps_a_lora_line_nearer_the_base(tmp_path) -> None:
    """With ``kl_coef`` the reference is the base with the adapter off: the same updates move the pushed
    weights less from it; a full fine-tune, which has no such reference, is refused at config time."""
    moved = {}
    for kl in (0.0, 1.0):
        tcfg = TrainerConfig(learning_rate=3e-3, kl_coef=kl, seed=0,
                             live={"push_weights": False, "default_scope": "shared", "lora_rank": 4})  # fmt: skip
        learner = LiveLearner(tcfg, "sluice-tiny", str(tmp_path / str(kl)))
        base = {n: t.clone() for n, t in learner.pushed_tensors().items()}
        stats = [learner.train(rows()) for _ in range(4)]
        assert (stats[-1]["kl"] > 0) == (kl > 0)
        moved[kl] = sum(float((t - base[n]).norm()) for n, t in learner.pushed_tensors().items())
    assert 0 < moved[1.0] < moved[0.0]
    with pytest.raises(ValueError, match="lora_rank"):
        TrainerConfig(kl_coef=0.1, live={"lora_rank": 0})
