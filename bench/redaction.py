"""Redaction benchmark: leaks on an independent set, precision/recall on the tuning set, and throughput.

Independent set (``bench/data/unseen_eval_set.py``, written apart from the recognizers): 300 multi-turn
trajectories with planted values of 21 structured kinds and person names of 17 locales, and 100 clean
trajectories of near-misses, each redacted step by step by ``Redactor.redact_event`` with the shipped
settings (NER on). Reported: leak rate and recall per type (a value leaks if it, or a piece of it,
survives anywhere in the redacted trajectory), person-name leak with NER on and off, false placeholders
per 20 clean trajectories, and stock Presidio (pattern-only, and with the same spaCy model) on the
same turns.

Tuning set: the Sluice analyzer (JSON payloads walked value by value with the key as context) on the
seeded eval set of bench/data (prose and JSON tool payloads; clean near-miss texts must yield nothing),
an end-to-end leak check through ``Redactor`` (does any labelled value survive?), and stock Presidio
(pattern-only, raw JSON strings) on the same set for comparison.

Held-out PII corpus (``bench/data/corpus_pii``, written apart from the recognizers, see its README): 383
single payloads of street addresses, dates of birth, passport numbers and zones, names of twelve naming
cultures in nine forms, undashed SSNs, national phone formats, card groupings and clean near misses, each
redacted as one step event with the same settings (``bench/redaction_corpus.py``). Reported: leak rate per
class, person leak on its name set, false placeholders per 20 clean records, must-keep strings lost. The
headline ``structured_leak_max``, ``person_leak`` and ``clean_false_placeholders_per_20`` are the worse of
the two independent sets.

Throughput, single process, CPU time (``time.process_time``): 20-turn agent trajectories redacted
(a) by ``Redactor`` on delta steps as the proxy sends them (state round-tripped through JSON each
step, as the Faust table does), (b) by ``Redactor`` when an unlinked agent re-sends its whole
history every step (the content-hash cache keeps the cost flat), and (c) by the naive baseline measured
in the same run: a plain stock ``AnalyzerEngine`` + ``AnonymizerEngine`` re-analysing the full history
every step. Stock Presidio's email recognizer gets an offline tldextract shim (it would download).

Throughput with NER on (the shipped setting) is timed on the same 20-turn trajectories, against stock
Presidio with the same spaCy model on the same delta steps, in the same run: the headline figures
(``ner_steps_per_s_per_core``, ``ner_steps_per_s_per_core_unseen``) redact the steps of all trajectories in
arrival batches of ``BATCH_EVENTS`` through ``Redactor.redact_many`` (one NER pass per batch), with the
event-by-event figures beside them; the batched output of the independent set must score exactly as the
event-by-event one (``unseen_batched_scores_as_single``).

    python -m bench.redaction            # ~5 min on one core
    python -m bench.redaction --quick    # smaller sets, for a smoke run
    python -m bench.redaction --accuracy-only --unseen-seed 9001   # another draw of the independent set
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from bench.data.agent_trajectories import as_resent, build_trajectories, history_texts, step_texts
from bench.data.redaction_eval_set import EvalCase, build_eval_set
from bench.data.unseen_eval_set import build_unseen_set
from bench.record import record_run
from bench.redaction_corpus import load_corpus, score_corpus
from bench.redaction_unseen import UnseenScore, _strings, as_steps, score_sluice, score_texts
from governance.config import RedactionConfig
from governance.redaction import PlaceholderState, Redactor
from governance.redaction.recognizers import PII_ENTITIES, SECRET_ENTITIES

STRUCTURED = (*PII_ENTITIES, *SECRET_ENTITIES)
Analyze = Callable[[str, list[str] | None], list[tuple[str, int, int]]]
TARGETS = {"structured_leak_max": 0.0, "person_leak": 0.05, "clean_false_placeholders_per_20": 1.0,
           "ner_steps_per_s_per_core": 1487.0, "ner_steps_per_s_per_core_unseen": 600.0,
           "structured_recall_min": 0.99, "clean_false_positives": 0, "speedup_vs_naive": 5.0,
           "pattern_steps_per_s_per_core": 3000.0}  # fmt: skip
BATCH_EVENTS = 64  # steps a stage hands the redactor at once (``Redactor.redact_many``)


# ----------------------------------------------------------------------------- accuracy


def iter_leaves(obj: object, path: str = "", key: str | None = None):
    """(pointer, key, text) of every string leaf and long integer, as RedactionPass walks them."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from iter_leaves(v, f"{path}/{k}", k)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from iter_leaves(v, f"{path}/{i}", key)
    elif isinstance(obj, str):
        yield path, key, obj
    elif isinstance(obj, int) and not isinstance(obj, bool) and abs(obj) >= 10**6:
        yield path, key, str(obj)


def score(cases: list[EvalCase], analyze: Analyze, walk_json: bool, entities: tuple[str, ...]) -> dict:
    """Per-entity tp/fp/fn (span overlap, same type), per-variant recall, clean false positives."""
    tp: dict[str, int] = defaultdict(int)
    fp: dict[str, int] = defaultdict(int)
    fn: dict[str, int] = defaultdict(int)
    var_hit: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    clean_fp = 0
    for c in cases:
        units: list[tuple[str, str, list[str] | None]] = [("", c.text, None)]
        gold = [(s.path, s.entity, s.start, s.end, s.variant) for s in c.spans]
        if c.kind == "json" and walk_json:
            units = [(p, t, [k] if k else None) for p, k, t in iter_leaves(json.loads(c.text))]
        elif c.kind == "json":  # raw string: relocate leaf spans into the serialised text
            gold = []
            for s in c.spans:
                leaf = dict((p, t) for p, _, t in iter_leaves(json.loads(c.text)))[s.path]
                at = c.text.find(leaf[s.start : s.end])
                gold.append(("", s.entity, at, at + s.end - s.start, s.variant))
        matched: set[int] = set()
        for path, text, ctx in units:
            for entity, start, end in analyze(text, ctx):
                if entity not in entities:
                    continue
                hit = next((i for i, g in enumerate(gold) if g[0] == path and g[1] == entity
                            and start < g[3] and end > g[2]), None)  # fmt: skip
                if hit is None:
                    fp[entity] += 1
                    clean_fp += c.clean
                elif hit not in matched:
                    matched.add(hit)
                    tp[entity] += 1
        for i, g in enumerate(gold):
            var_hit[g[4]][1] += 1
            if i in matched:
                var_hit[g[4]][0] += 1
            else:
                fn[g[1]] += 1
    per = {}
    for e in entities:
        support = tp[e] + fn[e]
        if support or fp[e]:
            per[e] = {"precision": round(tp[e] / (tp[e] + fp[e]), 4) if tp[e] + fp[e] else 1.0,
                      "recall": round(tp[e] / support, 4) if support else None, "support": support, "fp": fp[e]}  # fmt: skip
    variants = {v: round(h / n, 4) for v, (h, n) in sorted(var_hit.items())}
    return {"per_entity": per, "variant_recall": variants, "clean_false_positives": clean_fp}


def leak_check(cases: list[EvalCase], redactor: Redactor) -> int:
    """Labelled values still present after ``Redactor`` (every operator in effect)."""
    leaks = 0
    for c in cases:
        if c.clean:
            continue
        out, _, _ = redactor.redact_payload(c.text) if c.kind == "json" else redactor.redact_text(c.text)
        for s in c.spans:
            if c.kind == "json":
                leaf = dict((p, t) for p, _, t in iter_leaves(json.loads(c.text)))[s.path]
                value = leaf[s.start : s.end]
            else:
                value = c.text[s.start : s.end]
            leaks += value in out
    return leaks


def stock_analyzer(ner_model: str | None = None):
    """A plain stock Presidio AnalyzerEngine, all predefined recognizers; pattern-only (no_op NLP) unless
    ``ner_model`` names the spaCy package to load."""
    import types

    import presidio_analyzer.predefined_recognizers.generic.email_recognizer as email_mod
    import tldextract
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider

    email_mod.tldextract = types.SimpleNamespace(
        extract=tldextract.TLDExtract(cache_dir=None, suffix_list_urls=())
    )
    engine = "spacy" if ner_model else "no_op"
    models = [{"lang_code": "en", "model_name": ner_model or "no_op"}]
    nlp = NlpEngineProvider(nlp_configuration={"nlp_engine_name": engine, "models": models}).create_engine()
    return AnalyzerEngine(nlp_engine=nlp, supported_languages=["en"])


# ----------------------------------------------------------------------------- throughput


@contextmanager
def frozen_heap() -> Iterator[None]:
    """What was built before (engines, models) kept out of the collector's scans while a run is timed,
    as the stage worker does after start (app/commands/stages.py); same for every engine compared."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def growth(per_index: dict[int, float]) -> float:
    """CPU per step in the last 5 turns over the first 5 (1.0 = flat as the trajectory grows)."""
    idx = sorted(per_index)
    return round(sum(per_index[i] for i in idx[-5:]) / sum(per_index[i] for i in idx[:5]), 2)


def run_redactor(trajectories, cfg: RedactionConfig) -> tuple[float, int, Redactor, float]:
    redactor = Redactor.from_config(cfg)  # built once at stage start, as the stock engine is: not timed
    per_index: dict[int, float] = defaultdict(float)
    steps = 0
    with frozen_heap():
        t0 = time.process_time()
        for traj in trajectories:
            state_json = None
            for step in traj:
                ts = time.process_time()
                state = PlaceholderState.model_validate(state_json) if state_json else None
                _, new_state = redactor.redact_event(step, state)
                state_json = new_state.model_dump(mode="json")
                per_index[step.step_index] += time.process_time() - ts
                steps += 1
        cpu = time.process_time() - t0
    return cpu, steps, redactor, growth(per_index)


def arrival_batches(trajectories: list[list], size: int) -> Iterator[list]:
    """The steps of concurrent trajectories as a stage receives them: one step of each in turn (step k of
    every trajectory before step k+1 of any), in batches of ``size``."""
    order = [t[k] for k in range(max(map(len, trajectories), default=0)) for t in trajectories if k < len(t)]
    for i in range(0, len(order), size):
        yield order[i : i + size]


def run_batched(trajectories, redactor: Redactor, size: int = BATCH_EVENTS) -> tuple[float, int, dict]:
    """``Redactor.redact_many`` over the steps in arrival batches (``arrival_batches``), each trajectory's
    state round-tripped through JSON between batches as the Faust table does; CPU time, the steps, and
    the redacted events per trajectory id."""
    outputs: dict[str, list] = defaultdict(list)
    stored: dict[str, dict] = {}
    steps = 0
    with frozen_heap():
        t0 = time.process_time()
        for batch in arrival_batches(trajectories, size):
            tids = {e.trajectory_id for e in batch}
            states = {tid: PlaceholderState.model_validate(stored[tid]) for tid in tids if tid in stored}
            for event, out in zip(batch, redactor.redact_many(batch, states), strict=True):
                if isinstance(out, Exception):
                    raise out
                outputs[event.trajectory_id].append(out)
            stored.update({tid: s.model_dump(mode="json") for tid, s in states.items()})
            steps += len(batch)
        cpu = time.process_time() - t0
    return cpu, steps, outputs


def run_stock_delta(trajectories, analyzer) -> float:
    """Stock Presidio on delta steps only: separates the engine's cost from the quadratic re-analysis."""
    from presidio_anonymizer import AnonymizerEngine

    anonymizer = AnonymizerEngine()
    steps = 0
    with frozen_heap():
        t0 = time.process_time()
        for traj in trajectories:
            for step in traj:
                for text in step_texts(step):
                    anonymizer.anonymize(text, analyzer.analyze(text, language="en"))
                steps += 1
        cpu = time.process_time() - t0
    return steps / cpu


def run_naive(trajectories, analyzer) -> tuple[float, int, float]:
    from presidio_anonymizer import AnonymizerEngine

    anonymizer = AnonymizerEngine()
    per_index: dict[int, float] = defaultdict(float)
    steps = 0
    with frozen_heap():
        t0 = time.process_time()
        for traj in trajectories:
            for k in range(len(traj)):
                ts = time.process_time()
                for text in history_texts(traj, k):
                    results = analyzer.analyze(text, language="en")
                    anonymizer.anonymize(text, results)
                per_index[k] += time.process_time() - ts
                steps += 1
        cpu = time.process_time() - t0
    return cpu, steps, growth(per_index)


def unseen_figures(args, ner_cfg: RedactionConfig, cfg: RedactionConfig, stock, stock_ner) -> dict:
    """Leaks and false placeholders on the independent set: shipped settings, NER off, stock Presidio."""
    from presidio_anonymizer import AnonymizerEngine

    trajs = build_unseen_set(args.unseen_seed, *((60, 20) if args.quick else (300, 100)))
    shipped_redactor = Redactor.from_config(ner_cfg)
    unseen_steps = sum(len(as_steps(t)) for t in trajs)
    with frozen_heap():  # timed too: these trajectories carry names, so the NER model does run here
        t0 = time.process_time()
        shipped = score_sluice(trajs, shipped_redactor).summary()
        single_rate = unseen_steps / (time.process_time() - t0)
    # the same steps in arrival batches through ``redact_many`` (a fresh redactor: nothing cached), timed;
    # its output scored as well, and it must score as event by event does
    steps_of = {t.trajectory_id: as_steps(t) for t in trajs}
    cpu_batched, _, batched_out = run_batched(list(steps_of.values()), Redactor.from_config(ner_cfg))
    unseen_rate = unseen_steps / cpu_batched
    batched = UnseenScore()
    for t in trajs:
        outs = batched_out[t.trajectory_id]
        texts = [s for out in outs for s in _strings(out.model_dump(mode="json"))]
        batched.add(t, texts, sum((Counter(o.governance.redaction_report.entities) for o in outs), Counter()))
    batched_same = batched.summary() == shipped
    no_ner = score_sluice(trajs, Redactor.from_config(cfg)).summary()
    anonymizer = AnonymizerEngine()

    def stock_redact(engine):
        def redact(text: str):
            found = engine.analyze(text, language="en", score_threshold=cfg.score_threshold)
            return anonymizer.anonymize(text, found).text, Counter(r.entity_type for r in found)

        return redact

    stock_pat = score_texts(trajs, stock_redact(stock)).summary()
    stock_spacy = score_texts(trajs, stock_redact(stock_ner)).summary()
    print(f"independent set ({len(trajs)} trajectories, seed {args.unseen_seed}), leak rate per type:")
    for kind, leak in shipped["leak_per_type"].items():
        print(f"  {kind:22s} sluice={leak:.4f}  stock={stock_pat['leak_per_type'][kind]:.4f}  "
              f"stock+spaCy={stock_spacy['leak_per_type'][kind]:.4f}")  # fmt: skip
    print(f"  PERSON leak: sluice NER on={shipped['person_leak']:.4f} NER off={no_ner['person_leak']:.4f} "
          f"stock+spaCy={stock_spacy['person_leak']:.4f}")  # fmt: skip
    print(f"  false placeholders per 20 clean trajectories: sluice={shipped['clean_false_placeholders_per_20']} "
          f"{shipped['clean_false_placeholder_types']}  stock+spaCy={stock_spacy['clean_false_placeholders_per_20']}")  # fmt: skip
    if shipped["variant_leak"]:
        print(f"  leaking variants: {shipped['variant_leak']}")
    corpus = score_corpus(load_corpus(), shipped_redactor)
    print(f"held-out PII corpus ({corpus['corpus_records']} records), leak rate per class: "
          f"{corpus['corpus_leak_per_type']}; false placeholders per 20 clean records: "
          f"{corpus['corpus_clean_false_placeholders_per_20']}; must-keep lost: {corpus['corpus_must_keep_lost_per_class']}")  # fmt: skip
    worst = max(shipped["structured_leak_max"], corpus["corpus_structured_leak_max"])
    return {
        "unseen_trajectories": len(trajs),
        "structured_leak_max": worst,
        "structured_leak_max_type": shipped["structured_leak_max_type"]
        if shipped["structured_leak_max"] >= corpus["corpus_structured_leak_max"]
        else corpus["corpus_structured_leak_max_type"],
        "unseen_structured_leak_max": shipped["structured_leak_max"],
        "person_leak": max(shipped["person_leak"], corpus["corpus_person_leak"]),
        "unseen_person_leak": shipped["person_leak"],
        "person_leak_ner_off": no_ner["person_leak"],
        "clean_false_placeholders_per_20": max(
            shipped["clean_false_placeholders_per_20"], corpus["corpus_clean_false_placeholders_per_20"]
        ),
        "unseen_clean_false_placeholders_per_20": shipped["clean_false_placeholders_per_20"],
        "ner_steps_per_s_per_core_unseen": round(unseen_rate, 1),
        "ner_steps_per_s_per_core_unseen_single_event": round(single_rate, 1),
        "unseen_batched_scores_as_single": batched_same,
        "ner_windows_unseen": shipped_redactor.analyzer.ner_windows,
        "unseen_recall_per_type": shipped["recall_per_type"],
        "stock_presidio_structured_leak_max": stock_pat["structured_leak_max"],
        "stock_presidio_ner_person_leak": stock_spacy["person_leak"],
        "stock_presidio_ner_clean_false_placeholders_per_20": stock_spacy["clean_false_placeholders_per_20"],
        **{k: v for k, v in corpus.items() if k != "corpus_leaked_ids"},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller eval set and fewer trajectories")
    ap.add_argument("--no-record", action="store_true", help="Do not append the run to docs/benchmarks.")
    ap.add_argument("--seed", type=int, default=20251102)
    ap.add_argument("--unseen-seed", type=int, default=7331, help="seed of the independent set")
    ap.add_argument(
        "--accuracy-only", action="store_true", help="leaks and false placeholders only, no timing"
    )
    args = ap.parse_args()
    n_traj, n_naive = (10, 2) if args.quick else (50, 6)
    cases = build_eval_set(args.seed, *((30, 10, 150) if args.quick else (120, 40, 600)))
    cfg = RedactionConfig(
        operators={"SECRET": "drop", "CREDIT_CARD": "mask", "US_SSN": "hash"}, hash_key="bench-key"
    )
    redactor = Redactor.from_config(cfg)

    def sluice(text: str, ctx: list[str] | None) -> list[tuple[str, int, int]]:
        found, _ = redactor.analyzer.analyze(text, ctx)
        return [(f.entity_type, f.start, f.end) for f in found if f.score >= cfg.score_threshold]

    stock = stock_analyzer()

    def presidio(text: str, ctx: list[str] | None) -> list[tuple[str, int, int]]:
        found = stock.analyze(text, language="en", context=ctx, score_threshold=cfg.score_threshold)
        return [(r.entity_type, r.start, r.end) for r in found]

    acc = score(cases, sluice, walk_json=True, entities=STRUCTURED)
    acc_raw = score(cases, sluice, walk_json=False, entities=STRUCTURED)
    acc_stock = score(cases, presidio, walk_json=False, entities=PII_ENTITIES)
    leaks = leak_check(cases, redactor)
    print("accuracy (sluice, JSON walked with key context):")
    for e, m in acc["per_entity"].items():
        stock_m = acc_stock["per_entity"].get(e, {})
        print(f"  {e:22s} P={m['precision']:.4f} R={m['recall']}  n={m['support']:4d}  "
              f"| raw-JSON R={acc_raw['per_entity'].get(e, {}).get('recall')}  "
              f"| stock Presidio P={stock_m.get('precision')} R={stock_m.get('recall')}")  # fmt: skip
    print(f"  variant recall: {acc['variant_recall']}")
    print(f"  clean false positives: sluice={acc['clean_false_positives']} stock={acc_stock['clean_false_positives']}; "
          f"leaked values end-to-end: {leaks}")  # fmt: skip
    if args.accuracy_only:
        ner_cfg = cfg.model_copy(update={"ner": True})
        unseen = unseen_figures(args, ner_cfg, cfg, stock, stock_analyzer(ner_cfg.ner_model))
        print(json.dumps({"bench": "redaction", "accuracy_only": True, **unseen, "targets": TARGETS}))
        return

    trajectories = build_trajectories(args.seed, n_traj)
    cpu, steps, _, grow = run_redactor(trajectories, cfg)
    cpu_resend, steps_resend, r2, grow_resend = run_redactor([as_resent(t) for t in trajectories], cfg)
    cpu_naive, steps_naive, grow_naive = run_naive(trajectories[:n_naive], stock)
    rate_stock_delta = run_stock_delta(trajectories[:n_naive], stock)
    rate, rate_resend, rate_naive = steps / cpu, steps_resend / cpu_resend, steps_naive / cpu_naive
    print(f"throughput (steps/s per core, CPU time): sluice delta={rate:.0f}  sluice resend+cache={rate_resend:.0f} "
          f"(cache hit rate {r2.analyzer.cache.hits / max(1, r2.analyzer.cache.hits + r2.analyzer.cache.misses):.2f})  "
          f"naive stock={rate_naive:.1f}  (stock engine on delta steps={rate_stock_delta:.0f})")  # fmt: skip
    print(f"cost per step, last 5 turns / first 5: sluice delta={grow}  sluice resend+cache={grow_resend}  "
          f"naive={grow_naive}")  # fmt: skip

    ner_cfg = cfg.model_copy(update={"ner": True})
    cpu_ner_single, steps_ner_single, _, grow_ner = run_redactor(trajectories, ner_cfg)
    rate_ner_single = steps_ner_single / cpu_ner_single
    cpu_ner, steps_ner, _ = run_batched(trajectories, Redactor.from_config(ner_cfg))
    rate_ner = steps_ner / cpu_ner
    stock_ner = stock_analyzer(ner_cfg.ner_model)
    rate_stock_ner = run_stock_delta(trajectories[:n_naive], stock_ner)
    print(f"NER on (spaCy {ner_cfg.ner_model}), delta steps: sluice {rate_ner:.0f} steps/s per core, stock Presidio "
          f"with the same model {rate_stock_ner:.1f} ({rate_ner / rate_stock_ner:.0f}x); growth {grow_ner}; "
          f"event by event {rate_ner_single:.0f}")  # fmt: skip

    unseen = unseen_figures(args, ner_cfg, cfg, stock, stock_ner)

    recalls = {e: m["recall"] for e, m in acc["per_entity"].items() if m["recall"] is not None}
    result = {
        "bench": "redaction",
        "eval_cases": len(cases),
        "structured_recall_min": min(recalls.values()),
        "structured_recall_min_entity": min(recalls, key=recalls.get),
        "structured_precision_min": min(m["precision"] for m in acc["per_entity"].values()),
        "clean_false_positives": acc["clean_false_positives"],
        "leaked_values": leaks,
        "stock_presidio_pii_recall_min": min(m["recall"] for m in acc_stock["per_entity"].values() if m["recall"] is not None),
        "stock_presidio_clean_false_positives": acc_stock["clean_false_positives"],
        "pattern_steps_per_s_per_core": round(rate, 1),
        "resend_steps_per_s_per_core": round(rate_resend, 1),
        "naive_steps_per_s_per_core": round(rate_naive, 2),
        "stock_delta_steps_per_s_per_core": round(rate_stock_delta, 1),
        "speedup_vs_naive": round(rate / rate_naive, 1),
        "step_cost_growth_sluice": grow,
        "step_cost_growth_resend": grow_resend,
        "step_cost_growth_naive": grow_naive,
        "ner_steps_per_s_per_core": round(rate_ner, 1),
        "ner_steps_per_s_per_core_single_event": round(rate_ner_single, 1),
        "ner_batch_events": BATCH_EVENTS,
        "stock_presidio_ner_steps_per_s_per_core": round(rate_stock_ner, 1),
        "ner_speedup_vs_stock_presidio_ner": round(rate_ner / rate_stock_ner, 1),
        "step_cost_growth_ner": grow_ner,
        "trajectory_turns": 20,
        **unseen,
        "targets": TARGETS,
        "meets_targets": bool(unseen["structured_leak_max"] <= TARGETS["structured_leak_max"]
                              and unseen["person_leak"] <= TARGETS["person_leak"]
                              and unseen["clean_false_placeholders_per_20"] <= TARGETS["clean_false_placeholders_per_20"]
                              and rate_ner >= TARGETS["ner_steps_per_s_per_core"]
                              and unseen["ner_steps_per_s_per_core_unseen"] >= TARGETS["ner_steps_per_s_per_core_unseen"]
                              and min(recalls.values()) >= TARGETS["structured_recall_min"]
                              and acc["clean_false_positives"] == 0 and rate / rate_naive >= TARGETS["speedup_vs_naive"]
                              and rate >= TARGETS["pattern_steps_per_s_per_core"]),
    }  # fmt: skip
    if not args.no_record and not args.quick:
        targets = {k: (f"<= {v:g}" if k in ("structured_leak_max", "person_leak", "clean_false_placeholders_per_20")
                       else f">= {v:g}") for k, v in TARGETS.items() if k != "clean_false_positives"}  # fmt: skip
        notes = (f"NER figures: Redactor.redact_many on arrival batches of {BATCH_EVENTS} events; the redact stage "
                 "takes one event at a time (*_single_event figures)")  # fmt: skip
        record_run("redaction", result, targets, headline=["pattern_steps_per_s_per_core",
                   "ner_steps_per_s_per_core_unseen"], notes=notes)  # fmt: skip
    print(json.dumps(result))


if __name__ == "__main__":
    main()
