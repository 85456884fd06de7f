#!/usr/bin/env bash
# The test command (what .ci/run runs): install what the tests need (infra/install.sh), then run the suite in
# that same environment. Arguments go to pytest (default: the whole suite, `tests`). Exits with pytest's status.
set -euo pipefail
cd "$(dirname "$0")/.."
bash infra/install.sh
source infra/venv.sh
if [ "$#" -eq 0 ]; then set -- tests; fi
exec python -m pytest -q --durations=30 "$@"
