"""Per-trajectory placeholder state: which value got which ``<TYPE_n>`` number, never the value itself.

Values are keyed by a keyed hash (HMAC-SHA256 with ``RedactionConfig.hash_key``) of the normalised value,
so the state can live in a Faust table and its changelog topic without holding raw PII: without the key
the digests cannot be brute-forced from a dictionary of likely emails or phone numbers.

    state.model_dump(mode="json")  /  PlaceholderState.model_validate(d)
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class PlaceholderState(BaseModel):
    """Placeholder numbers of one trajectory: entity type -> {keyed digest -> number (1-based)}."""

    model_config = ConfigDict(extra="forbid")

    version: int = 1
    assigned: dict[str, dict[str, int]] = Field(default_factory=dict)

    def number_for(self, entity_type: str, digest: str) -> int:
        """The placeholder number of a digest, assigning the next free one on first sight (mutates)."""
        numbers = self.assigned.setdefault(entity_type, {})
        n = numbers.get(digest)
        if n is None:
            n = len(numbers) + 1
            numbers[digest] = n
        return n

    def copy_for_update(self) -> PlaceholderState:
        """A copy that can be mutated without touching this one (inner dicts copied too)."""
        return PlaceholderState(version=self.version, assigned={k: dict(v) for k, v in self.assigned.items()})

    @property
    def size(self) -> int:
        """Number of distinct values remembered."""
        return sum(len(v) for v in self.assigned.values())
