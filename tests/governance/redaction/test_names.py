"""Names across locales: by key, by cue, by NER behind a precision guard (versions, ids, products stay)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from governance.redaction import Redactor


@pytest.fixture(scope="module")
def ner(redactor_factory: Callable[..., Redactor]) -> Redactor:
    return redactor_factory(ner=True, hash_key="k")


@pytest.mark.parametrize(
    "body",
    [{"customer_name": "Chinedu Okonkwo"}, {"first_name": "Sanne", "last_name": "de Vries"},
     {"assignee": "Małgorzata Wiśniewska"}, {"contact": "Oğuz Yılmaz <o@example.net>"}],
)  # fmt: skip
def test_names_under_person_keys(ner: Redactor, body: dict) -> None:
    out, _, counts = ner.redact_payload(json.dumps(body, ensure_ascii=False))
    for v in body.values():
        assert v.split(" <")[0] not in out, out
    assert counts["PERSON"] >= 1


@pytest.mark.parametrize(
    ("text", "name"),
    [("Dear Haruto Takahashi,\nthanks for waiting.", "Haruto Takahashi"),
     ("Bitte rufen Sie Jürgen Oberländer zurück.", "Jürgen Oberländer"),
     ("Best regards,\nOluwaseun Adeyemi\nAccount Manager", "Oluwaseun Adeyemi"),
     ("Nguyen Van Anh called again about the shipment.", "Nguyen Van Anh"),
     ("Le client Thibault Duchêne a demandé un remboursement.", "Thibault Duchêne"),
     # every name of a list after the cue, where the model finds none of them
     ("Reported by Siobhan O'Connor and Nguyễn Văn An", "Siobhan O'Connor"),
     ("Reported by Siobhan O'Connor and Nguyễn Văn An", "Nguyễn Văn An"),
     ("cc: Oluwaseun Adeyemi, Małgorzata Wiśniewska & Haruto Takahashi", "Małgorzata Wiśniewska"),
     ("cc: Oluwaseun Adeyemi, Małgorzata Wiśniewska & Haruto Takahashi", "Haruto Takahashi")],
)  # fmt: skip
def test_names_by_cue_in_several_languages(ner: Redactor, text: str, name: str) -> None:
    out, _, counts = ner.redact_text(text)
    assert name not in out and name.split()[-1] not in out, out


@pytest.mark.parametrize(
    "text",
    ["I upgraded Kubernetes to 4.4.5-rc4 and reran ticket JIRA-4654.", "Can you compare Ford Ranger and Tesla Model Y?",
     "Successfully installed Visual Studio Code 1.2.3 in 27m10s (build 0a3511e52eae)",
     "Disk usage 3709 MiB (68.4%), uptime 34m59s, Oracle Database 23ai healthy", "Order SEC-2849 for Grafana shipped",
     "Logged by System Admin; reviewed by Support Team", "Ticket opened by Jira Automation and Build Bot"],
)  # fmt: skip
def test_guard_keeps_products_versions_and_ids(ner: Redactor, text: str) -> None:
    out, _, counts = ner.redact_text(text)
    assert out == text and not counts, out


def test_ner_reads_only_candidate_lines(ner: Redactor) -> None:
    code = "\n".join(f"    value_{i} = self.cache.get('k{i}', {i})" for i in range(200))
    before = ner.analyzer.ner_windows
    ner.redact_text(code + "\n# Siobhan Kettleborough fixed the cache\n")
    assert ner.analyzer.ner_windows - before == 1
