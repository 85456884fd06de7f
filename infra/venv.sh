# Sourced by the install scripts: puts the environment they install into first on PATH.
# The active virtual environment when there is one ($VIRTUAL_ENV), else .venv in the checkout, made here
# with Python 3.11+ ($PYTHON, default python3), which lends it its torch 2.13.0 when it has one
# (infra/seed_torch.py). SLUICE_SYSTEM_PYTHON=1 installs into the python on PATH.
if [ -n "${VIRTUAL_ENV:-}" ]; then
    export PATH="$VIRTUAL_ENV/bin:$PATH"
elif [ "${SLUICE_SYSTEM_PYTHON:-0}" != "1" ]; then
    if [ ! -x .venv/bin/python ]; then
        "${PYTHON:-python3}" -c 'import sys; assert sys.version_info >= (3, 11), "Sluice needs Python 3.11+"'
        "${PYTHON:-python3}" -m venv .venv
        # a torch==2.13.0 that Python already has is linked in rather than installed again
        "${PYTHON:-python3}" infra/seed_torch.py .venv
    fi
    export VIRTUAL_ENV="$PWD/.venv"
    export PATH="$VIRTUAL_ENV/bin:$PATH"
fi
# pip byte-compiles on one core; compile_env does it on every core once pip is done (--no-compile here).
# Not compiling at all would leave it to the first run, where each of `sluice up`'s services compiles the
# same torch and transformers modules at once.
PIP=(python -m pip install -q --disable-pip-version-check --no-compile)
compile_env() {
    # errors are files written for other Pythons (templates, test data), which pip's own compile skips too
    python -m compileall -q -j 0 "$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
        >/dev/null 2>&1 || true
}
