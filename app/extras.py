"""Which optional extra of the distribution provides a module: the hint a command prints when a package of
an extra that was not installed is imported (``pip install "sluice-rl[train]"``)."""

from __future__ import annotations

# top-level module -> the extra of pyproject.toml that installs it
EXTRA_OF_MODULE: dict[str, str] = {
    "ray": "train",
    "peft": "train",
    "gguf": "train",
    "matplotlib": "train",
    "opentelemetry": "otel",
}


def missing_extra_hint(err: ModuleNotFoundError) -> str | None:
    """The install hint for a module of an extra that is not installed; None for any other module."""
    top = (err.name or "").split(".")[0]
    extra = EXTRA_OF_MODULE.get(top)
    if extra is None:
        return None
    return (
        f'this command needs {top}, from the {extra} extra: pip install "sluice-rl[{extra}]" '
        f'(in a checkout: pip install -e ".[{extra}]"; bash infra/install.sh installs every extra)'
    )
