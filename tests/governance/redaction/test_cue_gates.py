"""The word gates in front of the case-insensitive cue patterns never hide a match.

``PersonCueRecognizer.may_match`` and ``PersonLocationRecognizer.may_match`` look the cue words up as a
set before running the patterns. Checked two ways: on every text of the independent evaluation set and
the agent-trajectory set (gate passes wherever the full pattern matches), and on cue sentences written
here in several languages, in the case forms a user types.
"""

from __future__ import annotations

import pytest

from bench.data.agent_trajectories import build_trajectories, step_texts
from bench.data.unseen_eval_set import build_unseen_set
from governance.redaction.recognizers import person_cue_recognizer as cue
from governance.redaction.recognizers import person_location_recognizer as loc
from governance.redaction.recognizers.base import letter_words

CUE_SENTENCES = [
    "Dear Oluwaseun Adeyemi, your refund is on its way.",
    "DEAR Haruto, thanks for waiting.",
    "I spoke with Nguyen Van Anh about the invoice.",
    "Ticket assigned the ticket to Priya Raman yesterday.",
    "Escalated it to Mateo Fernández.",
    "Le client Jean-Pierre Dubois a appelé ce matin.",
    "Der Kunde Jürgen Weiß hat angerufen.",
    "El cliente Alejandro Gómez llamó dos veces.",
    "O cliente João Pereira pediu reembolso.",
    "THE CUSTOMER Amara Okafor wants a callback.",
    "the patient Ingrid Johansson was discharged",
    "Sehr geehrte Frau Schmidt, anbei die Rechnung.",
    "Best regards,\nSiobhan O'Connor",
    "Mit freundlichen Grüßen\nKlaus Müller",
    "Cordialement,\nAmélie Laurent",
    "Atentamente,\nLucía Martínez",
    "Wei Zhang called about the outage.",
    "Fatima Al-Sayed, emailed the form.",
    "M. Olivier Bernard confirmed the order.",
    "Attn: Kwame Mensah",
]


@pytest.mark.parametrize("text", CUE_SENTENCES)
def test_cue_sentences_pass_the_gate_and_name_is_found(text: str) -> None:
    rec = cue.PersonCueRecognizer()
    assert cue.has_cue_word(text)
    assert rec.may_match(text)
    assert rec.analyze(text, ["PERSON"]), text


def _corpus() -> list[str]:
    texts = [t.text for traj in build_unseen_set(99, 80, 20) for t in traj.turns]
    texts += [t for traj in build_trajectories(5, 10) for s in traj for t in step_texts(s)]
    return texts + CUE_SENTENCES


def test_gate_never_hides_a_pattern_match() -> None:
    missed_cue = [
        t
        for t in _corpus()
        if any(rx.search(t) for rx in (cue._BEFORE, cue._SIGN_OFF, cue._AFTER)) and not cue.has_cue_word(t)
    ]
    missed_name = [
        t
        for t in _corpus()
        if loc.NAME_CANDIDATE.search(t) and not loc.PersonLocationRecognizer.may_match(None, t)  # type: ignore[arg-type]
    ]
    assert missed_cue == []
    assert missed_name == []


def test_gate_skips_text_without_cue_words() -> None:
    plain = "Order ORD-2291 shipped; client library v2.3 retried 3 times in 41 seconds."
    assert not cue.has_cue_word(plain)  # "client" alone, without an article before it, is no cue
    assert "client" in letter_words(plain)
    assert not loc.PersonLocationRecognizer.may_match(None, "status=ok latency=41ms")  # type: ignore[arg-type]
