"""Operators per entity type, resolved from config: exact type, then family (SECRET), then the default."""

from __future__ import annotations

from governance.config import RedactionConfig
from governance.redaction.operators.base import Operator, OperatorContext
from governance.redaction.operators.drop_operator import DropOperator
from governance.redaction.operators.hash_operator import HashOperator
from governance.redaction.operators.keep_operator import KeepOperator
from governance.redaction.operators.mask_operator import MaskOperator
from governance.redaction.operators.placeholder_operator import PlaceholderOperator

__all__ = ["Operator", "OperatorContext", "OperatorTable", "build_operator"]


def build_operator(name: str, cfg: RedactionConfig) -> Operator:
    """One operator instance configured from ``cfg``."""
    if name == "placeholder":
        return PlaceholderOperator()
    if name == "mask":
        return MaskOperator(cfg.mask_char, cfg.mask_keep_last)
    if name == "hash":
        return HashOperator()
    if name == "drop":
        return DropOperator(cfg.drop_marker)
    if name == "keep":
        return KeepOperator()
    raise ValueError(f"unknown operator {name!r}")


class OperatorTable:
    """Entity type -> operator, with family fallback (``operators: {SECRET: drop}`` covers every secret)."""

    def __init__(self, cfg: RedactionConfig, families: dict[str, str]) -> None:
        self._instances = {n: build_operator(n, cfg) for n in {cfg.default_operator, *cfg.operators.values()}}
        self._by_name = cfg.operators
        self._default = self._instances[cfg.default_operator]
        self._families = families
        self._resolved: dict[str, Operator] = {}

    def for_entity(self, entity_type: str) -> Operator:
        op = self._resolved.get(entity_type)
        if op is None:
            name = self._by_name.get(entity_type) or self._by_name.get(self._families.get(entity_type, ""))
            op = self._instances[name] if name else self._default
            self._resolved[entity_type] = op
        return op
