#!/usr/bin/env bash
# The first command on a fresh machine: install the product (infra/install_product.sh) and run
# `sluice demo` on the embedded default. Arguments go to `sluice demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash infra/install_product.sh
source infra/venv.sh
exec sluice demo "$@"
