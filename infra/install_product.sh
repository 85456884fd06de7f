#!/usr/bin/env bash
# Install the product: the distribution sluice-rl from this checkout with the offline NER model that the
# embedded default config (infra/sluice.yaml, redaction.ner: true) loads. Nothing the tests or benchmarks
# need beyond that (infra/install.sh adds those). Into the active virtual environment, else .venv.
# torch goes first so pip takes the CPU wheel instead of a multi-GB CUDA build; infra/constraints.txt holds
# the versions the suite passed with, so pip resolves at once instead of backtracking for minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
source infra/venv.sh
"${PIP[@]}" "torch==2.13.0"
"${PIP[@]}" -c infra/constraints.txt -e ".[ner]"
# xgrammar (JSON-schema constrained decoding of forced tool calls, trainers/serving/grammar.py) without its
# declared dependencies: on Linux x86_64 it names triton, a GPU compiler of several hundred MB that CPU
# decoding never imports; its runtime dependencies are the product's own (pyproject.toml).
"${PIP[@]}" --no-deps "xgrammar==0.2.8"
compile_env
