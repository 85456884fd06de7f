"""Probe the base reward of the verifiable tasks on a model, sampled as the policy server samples.

Prompts are rendered and sampled exactly as ``sluice serve-model`` does (ChatML, the batched decode loop,
the task's own ``max_tokens``), and each reply is graded by its task's checker. The benchmark's task must
start between 0.1 and 0.6: low enough to have room, high enough that some group members get a reward.
A multi-step task (``ToolTask``) runs as its agent does: the first call forced to the task's tool with the
arguments written under its schema (``trainers.serving.grammar``, as the server does), the tool run, the result sent
back with the history, the final reply sampled; the whole episode is graded (``grade_episode``).

    python -m bench.task_probe --model smollm2-135m-instruct --samples 48 --temperature 1.0
"""

from __future__ import annotations

import argparse
import json
import random
import time

import torch

from pipeline.learn.tasks import TASKS, Problem, ToolCall, ToolTask, build_tasks
from trainers.generation import GenRequest, generate
from trainers.serving.grammar import SchemaConstraint, arguments_grammar
from trainers.tiny_model import load_model, render_chat


def _ids(tok, messages: list[dict]) -> list[int]:  # noqa: ANN001
    return tok(render_chat(messages), add_special_tokens=False)["input_ids"]


def tool_episodes(
    model,
    tok,
    task: ToolTask,
    problems: list[Problem],
    temperature: float,
    stop: frozenset[int],  # noqa: ANN001
) -> list[tuple[float, str]]:
    """(score, transcript) per problem: forced tool call, the tool's result, the final reply."""
    fn = task.tools[0]["function"]
    grammar = arguments_grammar(fn.get("parameters") or {})
    first = generate(
        model,
        [GenRequest(prompt_ids=_ids(tok, p.messages), max_tokens=task.tool_max_tokens, temperature=temperature,
                    stop_ids=stop, constraint=SchemaConstraint(grammar, tok)) for p in problems],
        tok.pad_token_id,
    )  # fmt: skip
    calls, seconds = [], []
    for p, res in zip(problems, first, strict=True):
        call = ToolCall(fn["name"], tok.decode(res.token_ids, skip_special_tokens=True))
        msgs = [*p.messages,
                {"role": "assistant", "content": None,
                 "tool_calls": [{"id": "c", "type": "function", "function": {"name": call.name, "arguments": call.arguments}}]},
                {"role": "tool", "tool_call_id": "c", "content": task.run_tool(call.name, call.arguments)}]  # fmt: skip
        calls.append(call)
        seconds.append(GenRequest(prompt_ids=_ids(tok, msgs), max_tokens=task.max_tokens, temperature=temperature,
                                  stop_ids=stop))  # fmt: skip
    out = []
    for p, call, res in zip(problems, calls, generate(model, seconds, tok.pad_token_id), strict=True):
        reply = tok.decode(res.token_ids, skip_special_tokens=True)
        out.append((task.grade_episode(p, [call], reply), f"{call.arguments} -> {reply}"))
    return out


def probe(model_name: str, names: list[str], samples: int, temperature: float, seed: int, batch: int) -> dict:
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    t0 = time.perf_counter()
    model, tok = load_model(model_name)
    load_s = time.perf_counter() - t0
    stop = frozenset(i for i in (tok.eos_token_id, tok.convert_tokens_to_ids("<|im_end|>")) if i is not None)
    out: dict = {
        "model": model_name,
        "temperature": temperature,
        "samples": samples,
        "load_s": round(load_s, 1),
    }
    for task in build_tasks(names):
        rng = random.Random(seed)
        problems = [task.draw(rng) for _ in range(samples)]
        t1 = time.perf_counter()
        scores, examples = [], []
        for i in range(0, samples, batch):
            chunk = problems[i : i + batch]
            if isinstance(task, ToolTask):
                for score, transcript in tool_episodes(model, tok, task, chunk, temperature, stop):
                    scores.append(score)
                    if len(examples) < 4:
                        examples.append(transcript)
                continue
            reqs = [
                GenRequest(
                    prompt_ids=tok(render_chat(p.messages), add_special_tokens=False)["input_ids"],
                    max_tokens=task.max_tokens,
                    temperature=temperature,
                    stop_ids=stop,
                )
                for p in chunk
            ]
            for p, res in zip(chunk, generate(model, reqs, tok.pad_token_id), strict=True):
                reply = tok.decode(res.token_ids, skip_special_tokens=True)
                scores.append(task.grade(p, reply))
                if len(examples) < 4:
                    examples.append(reply)
        out[task.name] = {
            "reward": round(sum(scores) / len(scores), 3),
            "seconds": round(time.perf_counter() - t1, 1),
            "examples": examples,
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--tasks", nargs="+", default=sorted(TASKS))
    ap.add_argument("--samples", type=int, default=48)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=16)
    args = ap.parse_args()
    print(json.dumps(probe(args.model, args.tasks, args.samples, args.temperature, args.seed, args.batch)))


if __name__ == "__main__":
    main()
