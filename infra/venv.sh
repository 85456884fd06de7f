# Sourced by the install scripts: puts the environment they install into first on PATH.
# The active virtual environment when there is one ($VIRTUAL_ENV), else .venv in the checkout, made here
# with Python 3.11+ ($PYTHON, default python3). SLUICE_SYSTEM_PYTHON=1 installs into the python on PATH.
if [ -n "${VIRTUAL_ENV:-}" ]; then
    export PATH="$VIRTUAL_ENV/bin:$PATH"
elif [ "${SLUICE_SYSTEM_PYTHON:-0}" != "1" ]; then
    if [ ! -x .venv/bin/python ]; then
        "${PYTHON:-python3}" -c 'import sys; assert sys.version_info >= (3, 11), "Sluice needs Python 3.11+"'
        "${PYTHON:-python3}" -m venv .venv
    fi
    export VIRTUAL_ENV="$PWD/.venv"
    export PATH="$VIRTUAL_ENV/bin:$PATH"
fi
# --no-compile: byte-compiling every module of torch, ray and transformers at install time is most of an
# install's CPU; Python compiles what is imported on first use instead (once, into __pycache__).
PIP=(python -m pip install -q --disable-pip-version-check --no-compile)
