"""What a stage worker pays to start before it reads a record: importing its modules and building the
redaction engines, with the modules it never uses kept out (as ``sluice stages`` runs) vs stock imports.

Presidio imports Hugging Face transformers, and with it torch, for NLP engines the stages never build;
``sluice stages`` keeps both out (``app.commands.stages.keep_unused_modules_out``). Each variant runs in a
fresh interpreter (``python -c``): import ``pipeline.stages.app``, build the ``Redactor`` of the default
config, report CPU seconds, wall seconds and peak RSS. Variants alternate over ``--rounds`` (a shared
machine drifts); figures are medians. Ends with one JSON line.

    python -m bench.stage_startup              # ~1 min
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGETS = {"cpu_ratio_max": 0.5}

_PROBE = """
import json, resource, time
{guard}
wall, cpu = time.perf_counter(), time.process_time()
from pipeline.stages.app import StagesApp
from governance.config import RedactionConfig
from governance.redaction import Redactor
redactor = Redactor.from_config(RedactionConfig())
assert redactor.redact_text("mail me at jane@example.com")[0] == "mail me at <EMAIL_ADDRESS_1>"
import sys
print(json.dumps({{
    "cpu_s": time.process_time() - cpu,
    "wall_s": time.perf_counter() - wall,
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "torch_loaded": sys.modules.get("torch") is not None,
}}))
"""
_GUARD = "from app.commands.stages import keep_unused_modules_out; keep_unused_modules_out()"


def probe(guarded: bool) -> dict[str, float]:
    code = _PROBE.format(guard=_GUARD if guarded else "")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"kept_out": [], "stock": []}
    for r in range(args.rounds):
        order = [("kept_out", True), ("stock", False)]
        for name, guarded in order if r % 2 == 0 else order[::-1]:
            result = probe(guarded)
            runs[name].append(result)
            print(f"{name}: {result}", file=sys.stderr)

    def med(name: str, key: str) -> float:
        return round(statistics.median(float(x[key]) for x in runs[name]), 2)

    ratio = round(med("kept_out", "cpu_s") / med("stock", "cpu_s"), 3)
    result = {
        "bench": "stage_startup",
        "rounds": args.rounds,
        "startup_cpu_s": med("kept_out", "cpu_s"),
        "startup_cpu_s_stock_imports": med("stock", "cpu_s"),
        "startup_wall_s": med("kept_out", "wall_s"),
        "startup_wall_s_stock_imports": med("stock", "wall_s"),
        "peak_rss_mb": med("kept_out", "peak_rss_mb"),
        "peak_rss_mb_stock_imports": med("stock", "peak_rss_mb"),
        "cpu_ratio_vs_stock": ratio,
        "torch_loaded": any(x["torch_loaded"] for x in runs["kept_out"]),
        "targets": TARGETS,
        "meets_targets": ratio <= TARGETS["cpu_ratio_max"]
        and not any(x["torch_loaded"] for x in runs["kept_out"]),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
