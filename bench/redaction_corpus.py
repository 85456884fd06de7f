"""Leaks and over-redaction on the held-out PII corpus (``bench/data/corpus_pii``), written apart from the
recognizers: street addresses, dates of birth, passport numbers and zones, names of twelve naming
cultures in nine forms, undashed SSNs, national phone formats, card groupings, and clean near misses.

Each record becomes one step event, as the proxy would send it: a chat message as the user's turn, a text
carrier (e-mail, YAML, SQL, CSV, HTTP dump, log line, OCR'd passport page) and a tool result as a tool
message, tool-call arguments as the assistant's call. Every step goes through ``Redactor.redact_event``;
a record leaks when any of its ``must_redact`` strings survives anywhere in the redacted event (and, for
cards, phones and SSNs, when its digits survive in the output's digits), and over-redacts when one of its
``must_keep`` strings is gone. On clean records every redaction counted is a false placeholder.

    python -m bench.redaction_corpus          # figures with the shipped settings (NER on)
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from bench.data.unseen_eval_set import Planted, Turn, UnseenTrajectory, as_steps
from bench.redaction_unseen import UnseenScore, _strings
from governance.redaction import Redactor

CORPUS = Path(__file__).resolve().parent / "data" / "corpus_pii" / "corpus.jsonl"
KIND_OF_CLASS = {
    "address": "STREET_ADDRESS",
    "dob": "DATE_OF_BIRTH",
    "passport": "PASSPORT_NUMBER",
    "name": "PERSON",
    "ssn": "US_SSN",
    "phone": "PHONE_NUMBER",
    "card": "CREDIT_CARD",
}


def load_corpus(path: Path = CORPUS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def as_trajectory(record: dict[str, Any]) -> UnseenTrajectory:
    """One record as a one-turn trajectory, carried the way an agent would carry it."""
    carrier = record["carrier"]
    body = record["text"] if "text" in record else json.dumps(record["data"], ensure_ascii=False)
    role = "user" if carrier == "chat_user" else "call" if carrier == "tool_call_args" else "tool"
    planted = []
    if record["class"] != "clean":
        checks = list(record["must_redact"])
        if record.get("digits"):
            checks.insert(0, str(record["digits"]))
        kind = KIND_OF_CLASS[record["class"]]
        planted = [Planted(kind=kind, variant=f"{carrier}:{record.get('form', '')}", checks=checks)]
    turns = [
        Turn(role="user", text="Please help with the record below."),
        Turn(role=role, text=body, planted=planted),
    ]
    return UnseenTrajectory(
        trajectory_id=f"corpus-{record['id']}", clean=record["class"] == "clean", turns=turns
    )


def score_corpus(records: list[dict[str, Any]], redactor: Redactor) -> dict[str, Any]:
    """Leak rate per class and kind, person leak on the name records, false placeholders per 20 clean
    records, and the share of records that lost a ``must_keep`` string, per class."""
    score = UnseenScore()
    kept: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    leaked_ids: dict[str, list[str]] = defaultdict(list)
    for record in records:
        traj = as_trajectory(record)
        state = None
        texts: list[str] = []
        redacted: Counter[str] = Counter()
        for step in as_steps(traj):
            out, state = redactor.redact_event(step, state)
            texts += _strings(out.model_dump(mode="json"))
            redacted.update(out.governance.redaction_report.entities)
        before = sum(score.leaks.values())
        score.add(traj, texts, redacted)
        if sum(score.leaks.values()) > before:
            leaked_ids[record["class"]].append(record["id"])
        haystack = "\n".join(texts)
        lost = any(str(k) not in haystack for k in record.get("must_keep", []))
        kept[record["class"]][0] += lost
        kept[record["class"]][1] += 1
    summary = score.summary()
    new_types = {k: summary["leak_per_type"].get(k, 0.0) for k in KIND_OF_CLASS.values() if k != "PERSON"}
    return {
        "corpus_records": len(records),
        "corpus_leak_per_type": {**new_types, "PERSON": summary["person_leak"]},
        "corpus_structured_leak_max": max(new_types.values()),
        "corpus_structured_leak_max_type": max(new_types, key=new_types.get),
        "corpus_person_leak": summary["person_leak"],
        "corpus_clean_false_placeholders_per_20": summary["clean_false_placeholders_per_20"],
        "corpus_clean_false_placeholder_types": summary["clean_false_placeholder_types"],
        "corpus_must_keep_lost_per_class": {c: round(a / n, 4) for c, (a, n) in sorted(kept.items())},
        "corpus_leaking_variants": summary["variant_leak"],
        "corpus_leaked_ids": {c: ids[:12] for c, ids in leaked_ids.items()},
    }


def main() -> None:
    from governance.config import RedactionConfig

    cfg = RedactionConfig(
        ner=True, operators={"SECRET": "drop", "CREDIT_CARD": "mask", "US_SSN": "hash"}, hash_key="bench-key"
    )
    print(json.dumps(score_corpus(load_corpus(), Redactor.from_config(cfg)), ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
