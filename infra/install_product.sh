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
compile_env
