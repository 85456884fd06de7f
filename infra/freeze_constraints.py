"""Write infra/constraints.txt: the versions of sluice-rl's dependency closure in a working environment.

The install scripts pass the file to pip as constraints (``-c``), so a fresh machine gets the versions the
suite passed with, and pip does not backtrack: left alone it walks through dozens of uvicorn, transformers
and huggingface-hub releases (a newer hub wants a click that faust-streaming caps) for many minutes.
Regenerate it in an environment where the tests pass, after changing a dependency:

    python -m infra.freeze_constraints > infra/constraints.txt
"""

from __future__ import annotations

import importlib.metadata as md
import re

from packaging.requirements import Requirement

ROOTS = [("sluice-rl", ("ner", "train", "otel", "dev", "docs")), ("mkdocs", ()), ("mkdocs-material", ())]
SKIP = {"sluice-rl"}  # the checkout itself


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(roots: list[tuple[str, tuple[str, ...]]]) -> dict[str, str]:
    """Installed version of every distribution the roots (name, extras) reach through their declared
    requirements, markers evaluated here, by normalised name (the roots included)."""
    seen: set[tuple[str, str]] = set()
    todo = [(root, extra) for root, extras in roots for extra in ("", *extras)]
    pins: dict[str, str] = {}
    while todo:
        dist, extra = todo.pop()
        if (norm(dist), extra) in seen:
            continue
        seen.add((norm(dist), extra))
        try:
            meta = md.distribution(dist)
        except md.PackageNotFoundError:
            continue  # for another platform or Python
        pins[norm(dist)] = meta.version.split("+")[0]  # torch 2.13.0+cpu: the CPU wheel is chosen by index
        for line in meta.requires or []:
            req = Requirement(line)
            if req.marker and not req.marker.evaluate({"extra": extra}):
                continue
            todo += [(req.name, e) for e in ("", *sorted(req.extras))]
    return pins


if __name__ == "__main__":
    print(
        "# The versions the test suite passed with: python -m infra.freeze_constraints > infra/constraints.txt"
    )
    for name, version in sorted(closure(ROOTS).items()):
        if name not in SKIP:
            print(f"{name}=={version}")
