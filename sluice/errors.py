"""The one root error of Sluice. Each package subclasses it in its own ``exceptions.py``."""

from __future__ import annotations

from pydantic import ValidationError


class SluiceError(Exception):
    """Root of every error Sluice raises on purpose."""


class ConfigError(SluiceError):
    """A config file or value is invalid. ``problems`` holds one ``path: reason`` line per bad field."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        self.problems = list(problems or [])
        super().__init__(message)

    def __str__(self) -> str:
        head = super().__str__()
        return "\n".join([head, *("  " + p for p in self.problems)]) if self.problems else head


def validation_problems(err: ValidationError) -> list[tuple[str, str]]:
    """``(dotted.path, reason)`` per bad field of a pydantic error ("" for the root), in pydantic's order,
    with pydantic's "Value error, " prefix dropped from reasons our validators wrote. Never the offending
    input (it may hold PII or a key)."""
    return [
        (".".join(str(x) for x in e["loc"]), str(e["msg"]).removeprefix("Value error, "))
        for e in err.errors(include_input=False, include_url=False)
    ]


def validation_summary(err: ValidationError, limit: int | None = None) -> str:
    """The problems of a pydantic error on one line, ``path: reason; ...`` (``<root>`` for the root), the
    first ``limit`` of them and how many more."""
    problems = validation_problems(err)
    shown = problems if limit is None else problems[:limit]
    text = "; ".join(f"{loc or '<root>'}: {msg}" for loc, msg in shown)
    more = len(problems) - len(shown)
    return text + (f" (+{more} more)" if more > 0 else "")
