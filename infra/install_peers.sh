#!/usr/bin/env bash
# Install the peers `python -m bench.proxy` runs side by side with Sluice, each in its own environment so
# that their dependency pins never touch Sluice's: LiteLLM's proxy (Python) in var/peers/litellm and
# TensorZero's gateway (Rust, embedded in its PyPI wheel) in var/peers/tensorzero. Skipped when present.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python}"
if [ ! -x var/peers/litellm/bin/litellm ]; then
    "$PY" -m venv var/peers/litellm
    var/peers/litellm/bin/pip install -q --disable-pip-version-check "litellm[proxy]==1.108.7"
fi
if ! var/peers/tensorzero/bin/python -c "import tensorzero" >/dev/null 2>&1; then
    "$PY" -m venv var/peers/tensorzero
    var/peers/tensorzero/bin/pip install -q --disable-pip-version-check "tensorzero==2026.6.0"
fi
