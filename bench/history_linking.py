"""CPU the proxy's step recorder spends per call of a long agent trajectory, with and without the chain cache.

    python -m bench.history_linking                    # 200 turns (~600 messages), 5 rounds (~20 s)
    python -m bench.history_linking --turns 50 --rounds 3

In-process, no network: one ``StepRecorder`` (the proxy's own, with a discarding publisher) takes every
call of an agent whose history grows by a user message, a tool call and its result per turn, as the
proxy's chat surface drives it (``begin`` -> ``finish`` -> build + encode the step event). Each round
runs the whole trajectory once with the link-chain cache (``proxy.link_chain_bytes``) on and once off
(every call hashes its whole history), interleaved; the per-call process CPU medians are reported, with
how many messages each mode link-hashed. The final line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.record import record_run
from pipeline.proxy.config import BackendConfig
from pipeline.proxy.linking.history_linker import HistoryLinker
from pipeline.proxy.linking.link_chain_cache import LinkChainCache
from pipeline.proxy.openai_chat.protocol import ChatCompletionRequest
from pipeline.proxy.ops.metrics import ProxyMetrics
from pipeline.proxy.publishing.discard_publisher import DiscardPublisher
from pipeline.proxy.publishing.step_journal import StepJournal
from pipeline.proxy.recording.recorder import StepRecorder, Topics
from pipeline.proxy.recording.step import RawChoice
from pipeline.proxy.surfaces.auth import Caller
from pipeline.proxy.surfaces.context import CallContext
from pipeline.proxy.surfaces.request import validate_request
from pipeline.proxy.trajectories.seen import SeenTrajectories

_BACKEND = BackendConfig(name="echo", base_url="http://127.0.0.1:1/v1")
_CALLER = Caller(tenant="acme", data_class="internal", consent_training=True)


def _turn(t: int) -> list[dict[str, Any]]:
    call = {
        "id": f"call_{t}",
        "type": "function",
        "function": {"name": "shell", "arguments": f'{{"cmd": "ls {t}"}}'},
    }
    return [
        {"role": "user", "content": f"Step {t}: look at the output and decide what to run next. " * 3},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"call_{t}", "content": f"file_{t}.py\nREADME.md\n" * 4},
    ]


def _run(turns: int, cache: LinkChainCache, spool: Path) -> float:
    """One trajectory of ``turns`` calls; process CPU seconds per call."""
    recorder = StepRecorder(
        HistoryLinker(3600.0, 10_000),
        DiscardPublisher(),
        Topics("steps", "rewards", "deadletter"),
        ProxyMetrics(),
        StepJournal(spool / f"journal-{time.monotonic_ns()}.jsonl"),
        publishing=True,
        on_journal_full=lambda: None,
        seen=SeenTrajectories(10_000),
        chains=cache,
    )
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful coding agent."}]
    cpu = 0.0
    for t in range(turns):
        head, reply, result = _turn(t)
        history.append(head)
        body = {"model": "m", "messages": list(history), "tools": [{"type": "function", "name": "shell"}]}
        request = validate_request(ChatCompletionRequest, body, "chat")
        ctx = CallContext(_CALLER, None, "header", None, {}, datetime.now(UTC), time.perf_counter())
        choices, answer = [RawChoice(0, dict(reply), "tool_calls")], {"usage": {"prompt_tokens": 9}}
        c0 = time.process_time()
        step = recorder.begin(ctx, request, backend=_BACKEND, operation="chat", provider="openai")
        step.end(200, None, 1.0, answer, choices)
        recorder.finish(step)
        cpu += time.process_time() - c0
        history += [reply, result]
    return cpu / turns


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--turns", type=int, default=200, help="Calls per trajectory (3 messages added per call)."
    )
    ap.add_argument("--rounds", type=int, default=5, help="Interleaved rounds; medians are reported.")
    ap.add_argument("--no-record", action="store_true", help="Do not append the run to docs/benchmarks.")
    args = ap.parse_args()
    on: list[float] = []
    off: list[float] = []
    hashed: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="bench-history-linking-") as tmp:
        for _ in range(args.rounds):
            for name, runs, digests in (("cached", on, 64 << 20), ("uncached", off, 0)):
                cache = LinkChainCache(digests, hash_key=b"k" * 32)
                runs.append(_run(args.turns, cache, Path(tmp)))
                hashed[name] = cache.linked
    result = {
        "turns": args.turns,
        "messages_last_call": 1 + 3 * (args.turns - 1) + 1,
        "cpu_us_per_call_cached": round(statistics.median(on) * 1e6, 1),
        "cpu_us_per_call_uncached": round(statistics.median(off) * 1e6, 1),
        "messages_link_hashed_cached": hashed["cached"],
        "messages_link_hashed_uncached": hashed["uncached"],
    }
    result["cpu_ratio_cached_vs_uncached"] = round(
        result["cpu_us_per_call_cached"] / result["cpu_us_per_call_uncached"], 3
    )
    if not args.no_record:
        notes = f"{args.turns} calls of one trajectory, {args.rounds} interleaved rounds, medians; in-process"
        record_run("history_linking", result, {}, headline=["cpu_us_per_call_cached", "cpu_us_per_call_uncached",
                   "cpu_ratio_cached_vs_uncached"], notes=notes)  # fmt: skip
    print(json.dumps(result))


if __name__ == "__main__":
    main()
