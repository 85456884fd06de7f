"""What a running `sluice serve-model` holds and how fast it decodes, read from outside the process.

* ``serve_rss_mb``: the resident memory of the serve-model process started with a given config file;
* ``kept_versions``: the versions it keeps (``GET /v1/policy``) with the bytes each added;
* ``decode_tokens_per_s``: ``rows`` completions at once, each decoding ``tokens`` tokens (end-of-sequence
  ignored), every row on the default version or spread round robin over ``versions`` (header
  ``x-sluice-policy-version``): bench.policy_versions' method, through HTTP against the live server.

    python -m bench.tenant_policies --quick
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

PICK = "x-sluice-policy-version"


def serve_rss_mb(config: Path) -> float | None:
    """RSS of the serve-model process whose command line names ``config`` (None: not found)."""
    for proc in psutil.process_iter(["cmdline", "memory_info"]):
        cmd = " ".join(proc.info.get("cmdline") or [])
        if "serve-model" in cmd and str(config) in cmd and proc.info.get("memory_info") is not None:
            return proc.info["memory_info"].rss / (1024 * 1024)
    return None


def kept_versions(url: str) -> list[dict[str, Any]]:
    return list(httpx.get(f"{url}/v1/policy", timeout=30).json().get("kept") or [])


async def _decode(url: str, model: str, prompt: list[int], asks: list[str | None], tokens: int) -> float:
    body = {"model": model, "prompt": prompt, "max_tokens": tokens, "temperature": 1.0, "ignore_eos": True}
    async with httpx.AsyncClient(timeout=600) as http:

        async def one(i: int, version: str | None) -> int:
            headers = {PICK: version} if version else {}
            resp = await http.post(f"{url}/v1/completions", json={**body, "seed": i}, headers=headers)
            resp.raise_for_status()
            return int(resp.json()["usage"]["completion_tokens"])

        t0 = time.perf_counter()
        counts = await asyncio.gather(*(one(i, v) for i, v in enumerate(asks)))
        return sum(counts) / (time.perf_counter() - t0)


def decode_ratio(
    url: str,
    model: str,
    prompt: list[int],
    versions: list[str],
    rows: int = 8,
    tokens: int = 16,
    repeats: int = 2,
) -> dict[str, float]:
    """Decode tokens/s with every row on the default, and spread over ``versions``; best of ``repeats``."""
    single_asks: list[str | None] = [None] * rows
    mixed_asks: list[str | None] = (
        [versions[i % len(versions)] for i in range(rows)] if versions else single_asks
    )
    asyncio.run(_decode(url, model, prompt, [None, None], 2))  # warm-up
    single = max(asyncio.run(_decode(url, model, prompt, single_asks, tokens)) for _ in range(repeats))
    mixed = max(asyncio.run(_decode(url, model, prompt, mixed_asks, tokens)) for _ in range(repeats))
    return {
        "decode_tokens_per_s_single": round(single, 2),
        "decode_tokens_per_s_mixed": round(mixed, 2),
        "decode_tokens_per_s_ratio_mixed_vs_single": round(mixed / single, 3) if single else float("nan"),
        "versions_in_mixed_decode": len(set(mixed_asks)),
    }
