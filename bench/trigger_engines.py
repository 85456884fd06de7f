"""The multi-pattern engines for the recognizers' triggers, compared on the benchmark's texts: RE2 sets
(``google-re2``, shipped) and Hyperscan (``hyperscan``, not a dependency: ``pip install hyperscan``).

The shipped settings' triggers (NER on) are compiled once into each engine; reported: compile seconds, and
CPU microseconds per text scanned, on the texts of 20 of ``bench.redaction``'s trajectories, cold (first
pass of a fresh set over the texts, as a stage that just started) and warm (the same texts again). Both
answer the same question (which recognizers' triggers occur), so only cost is compared.

    python -m bench.trigger_engines
"""

from __future__ import annotations

import json
import time

import re2

from bench.data.agent_trajectories import build_trajectories, step_texts
from governance.config import RedactionConfig
from governance.redaction import Redactor
from governance.redaction.recognizers.base import Prefiltered
from governance.redaction.trigger_scan import re2_syntax


def per_text_us(scan, texts: list[str]) -> float:
    t0 = time.process_time()
    for text in texts:
        scan(text)
    return round((time.process_time() - t0) / len(texts) * 1e6, 1)


def main() -> None:
    import hyperscan

    recognizers = Redactor.from_config(RedactionConfig(ner=True, hash_key="k")).analyzer._by_language["en"]
    patterns = [
        p
        for r in recognizers
        if isinstance(r, Prefiltered) and r.trigger_patterns() is not None
        for p in (*r.trigger_patterns(), *r.TRIGGER_ALSO)
    ]
    texts = list(
        dict.fromkeys(t for traj in build_trajectories(20251102, 20) for s in traj for t in step_texts(s))
    )

    t0 = time.perf_counter()
    options = re2.Options()
    options.max_mem = 64 << 20
    rset = re2.Set.SearchSet(options)
    for p in patterns:
        rset.Add(re2_syntax(p))
    rset.Compile()
    re2_compile = time.perf_counter() - t0

    t0 = time.perf_counter()
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    flags = hyperscan.HS_FLAG_UTF8 | hyperscan.HS_FLAG_UCP | hyperscan.HS_FLAG_SINGLEMATCH
    db.compile(expressions=[p.encode() for p in patterns], ids=list(range(len(patterns))),
               elements=len(patterns), flags=[flags] * len(patterns))  # fmt: skip
    hs_compile = time.perf_counter() - t0

    def hs_scan(text: str) -> None:
        db.scan(text.encode(), match_event_handler=lambda i, a, b, f, ctx: ctx.add(i), context=set())

    figures = {
        "patterns": len(patterns),
        "texts": len(texts),
        "re2_compile_s": round(re2_compile, 3),
        "hyperscan_compile_s": round(hs_compile, 3),
        "re2_us_per_text_cold": per_text_us(rset.Match, texts),
        "re2_us_per_text_warm": per_text_us(rset.Match, texts),
        "hyperscan_us_per_text_cold": per_text_us(hs_scan, texts),
        "hyperscan_us_per_text_warm": per_text_us(hs_scan, texts),
    }
    print(json.dumps({"bench": "trigger_engines", **figures}))


if __name__ == "__main__":
    main()
