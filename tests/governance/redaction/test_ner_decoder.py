"""The batch NER decoder sets exactly the entities spaCy's own pipeline sets, on any batch of texts."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
import spacy

from governance.config import RedactionConfig
from governance.redaction import Redactor
from governance.redaction.ner_decoder import BatchNerDecoder, DecodingSpacyNlpEngine, supports

_MODEL = RedactionConfig(ner=True).ner_model
_WORDS = str.split(
    "Ana Souza Tom Ellis Helga Brandt Priya Raman Olu Adeyemi Kenji Watanabe Lisbon Lyon Berlin Lagos "
    "Microsoft Teams Google Pixel Amazon Redshift Kubernetes Tesla Model Y SEC-2849 Dear Mr. Herr Dr. the a "
    "met flew to from in at and for reviewed shipped called lives said , . ; : ( ) \" ' - 42 2026-03-11 "
    "$533.95 v10.5.19 PID 31319 exit code passed failed ana@example.com +44 20 7946 0958 Monday Acme Corp"
)


def _texts(rng: random.Random, n: int) -> list[str]:
    texts = []
    for _ in range(n):
        words = rng.choices(_WORDS, k=rng.randint(0, 40))
        seps = rng.choices([" ", " ", " ", "  ", "\n", "\t", " \n "], k=len(words))
        texts.append("".join(w + s for w, s in zip(words, seps, strict=True)).strip(rng.choice(["", " "])))
    return texts


@pytest.fixture(scope="module")
def nlp() -> spacy.language.Language:
    model = spacy.load(_MODEL)
    model.select_pipes(disable=[p for p in model.pipe_names if p != "ner"])
    return model


def _read(docs: list) -> list[list[tuple[int, int, str, str]]]:
    return [[(t.i, t.ent_iob_, t.ent_type_, t.text) for t in d] for d in docs]


def test_decoder_sets_the_entities_spacy_sets(nlp: spacy.language.Language) -> None:
    decoder = BatchNerDecoder(nlp)
    rng = random.Random(20261206)
    fixed = [
        "Angela Merkel met Barack Obama in Berlin.",
        "",
        " ",
        "Dear Ana",
        "Olu Adeyemi and Tom Ellis reviewed it in Lisbon.\nHelga Brandt",
        "Can you compare Google Pixel 9 and Grafana for our team? Budget is $533.95 per seat.",
    ]
    entities = 0
    for size in (1, 2, 7, 40, 120):
        batch = fixed + _texts(rng, size)
        expected = list(nlp.pipe(batch, batch_size=len(batch)))
        got = decoder(batch)
        assert _read(got) == _read(expected)
        assert [[(e.start_char, e.end_char, e.label_) for e in d.ents] for d in got] == [
            [(e.start_char, e.end_char, e.label_) for e in d.ents] for d in expected
        ]
        entities += sum(len(d.ents) for d in got)
    assert entities > 100  # the texts do make the model open entities of several lengths


def test_decoder_takes_over_only_a_greedy_biluo_ner(nlp: spacy.language.Language) -> None:
    assert supports(nlp.get_pipe("ner"))
    full = spacy.load(_MODEL)
    if "parser" in full.pipe_names:
        assert not supports(full.get_pipe("parser"))  # arc-eager moves, not BILUO
        with pytest.raises(ValueError):
            BatchNerDecoder(full, "parser")


def test_engine_decodes_the_ner_only_pipeline(redactor_factory: Callable[..., Redactor]) -> None:
    engine = redactor_factory(ner=True, hash_key="k").engines.analyzer.nlp_engine
    assert isinstance(engine, DecodingSpacyNlpEngine) and engine.use_decoders() == ["en"]
    texts = ["Angela Merkel met Barack Obama in Berlin.", "exit code 0"]
    decoded = [(t, [(e.text, e.label_) for e in a.entities]) for t, a in engine.process_batch(texts, "en")]
    assert decoded[0][1] == [("Angela Merkel", "PERSON"), ("Barack Obama", "PERSON"), ("Berlin", "LOCATION")]
    single = engine.process_text(texts[0], "en")
    assert [(e.text, e.label_) for e in single.entities] == decoded[0][1]
