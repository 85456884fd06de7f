"""The unlearning benchmark's canary plant: the code is never in a prompt, and its grader credits each
right position of the reply's leading digits."""

import random

from transformers import AutoTokenizer

from bench.unlearn_probe import CANARY_FORMAT, VaultCodeTask, draw_canary, exposure, probe_prompt, rise_share
from trainers.smollm2 import smollm2_dir


def test_the_code_is_only_in_the_grader_and_each_right_position_earns_a_sixth() -> None:
    code = draw_canary(7)
    assert len(code) == 6 and code.isdigit() and code == draw_canary(7) != draw_canary(8)
    task = VaultCodeTask(code)
    p = task.draw(random.Random(0))
    assert all(code not in m["content"] for m in p.messages)
    assert task.grade(p, code) == 1.0
    assert task.grade(p, f" {code}\n") == 1.0
    one_wrong = str((int(code[0]) + 1) % 10) + code[1:]
    assert task.grade(p, one_wrong) == 5 / 6
    assert task.grade(p, code[:3]) == 0.5  # a short reply is credited for the positions it has
    assert task.grade(p, f"The vault code is {code}") == 0.0  # the answer must lead the reply
    assert task.grade(p, "") == 0.0


def test_the_probe_is_the_task_prompt_and_withholds_the_code() -> None:
    tok = AutoTokenizer.from_pretrained(str(smollm2_dir()))
    code = draw_canary(3)
    prompt = probe_prompt(tok)
    problem = VaultCodeTask(code).draw(random.Random(1))
    assert prompt == tok.apply_chat_template(problem.messages, tokenize=False, add_generation_prompt=True)
    assert code not in prompt
    assert CANARY_FORMAT.text(code) == code and CANARY_FORMAT.space == 10**6


def test_the_rise_share_tells_a_learned_canary_from_drift() -> None:
    before = [float(i) for i in range(16)]  # the canary (index 0) ranked last
    learned = [100.0, *before[1:]]  # the canary alone moved to the top
    assert exposure(before) == 0.0 and exposure(learned) == 4.0
    assert rise_share(before, learned) == 0.0
    assert rise_share(before, before) == 1.0  # nothing moved: every code rose as much (zero)
    drift = list(reversed(before))  # every code moved; the canary's rise is the largest of all
    assert rise_share(before, drift) == 0.0
    shuffled = [before[(i * 7) % 16] for i in range(16)]  # a permutation: the canary's rise is middling
    assert 0.0 < rise_share(before, shuffled) < 1.0
