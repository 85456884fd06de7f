#!/usr/bin/env bash
# Install Sluice and everything its tests and benchmarks need, on a fresh machine with Python 3.11.
# torch goes first so pip takes the local CPU wheel instead of a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q --disable-pip-version-check "torch==2.13.0"
python -m pip install -q --disable-pip-version-check -e ".[dev,ner]"
