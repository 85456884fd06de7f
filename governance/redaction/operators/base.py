"""The operator plug point: what replaces a detected value (one implementation per file).

An operator sees the value, its entity type and an ``OperatorContext`` holding the trajectory's
placeholder state and the keyed hasher. Returning ``None`` leaves the value in place (``keep``):
such findings are counted as residual PII in the redaction report.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from governance.redaction.keyed_hash import KeyedHasher, normalise
from governance.redaction.state import PlaceholderState

STATE_PURPOSE = "placeholder-state"
HASH_PURPOSE = "hash-operator"


@dataclass
class OperatorContext:
    """What operators may use while redacting one event: state is mutated in place (a working copy)."""

    state: PlaceholderState
    hasher: KeyedHasher
    phone_region: str = "US"

    def normalised(self, entity_type: str, value: str) -> str:
        return normalise(entity_type, value, self.phone_region)


class Operator(ABC):
    """Turns one detected value into its replacement (or ``None`` to keep it)."""

    name: ClassVar[str]

    @abstractmethod
    def apply(self, value: str, entity_type: str, ctx: OperatorContext) -> str | None:
        """The replacement text for ``value`` of type ``entity_type``."""
