"""Guard for the install of verl's dataset code: every top-level module that verl's ``RLHFDataset`` module
imports must come from ``var/verl`` (what infra/install.sh puts there) or from the declared dependency
closure of ``sluice-rl`` with the extras the test install names. A module found elsewhere (a package that
only happens to be on one machine, as cloudpickle once was) fails here, not on a fresh CI machine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from infra import freeze_constraints

REPO = Path(__file__).resolve().parents[2]
VERL_DIR = REPO / "var" / "verl"
TEST_EXTRAS = ("ner", "train", "otel", "dev", "docs")  # infra/install.sh: -e ".[ner,train,otel,dev,docs]"

pytestmark = pytest.mark.skipif(
    not (VERL_DIR / "verl").is_dir(), reason="verl not in var/verl (bash infra/install.sh)"
)

# Runs as tests/sinks/verl_dataset_check.py runs (var/verl first on the path, its own process), with an
# path finder that does not see a top-level module neither var/verl, the standard library, this checkout
# nor an allowed distribution provides: what a fresh machine with only those would see. A refused module
# that was optional (imported under try/except) changes nothing; a required one fails the import.
PROBE = """
import importlib.machinery, importlib.metadata as md, json, os, re, site, sys, sysconfig
verl_dir, repo, allowed = sys.argv[1], sys.argv[2], set(json.loads(sys.argv[3]))
sys.path.insert(0, verl_dir)
owners = md.packages_distributions()
sites = [os.path.realpath(p) for p in site.getsitepackages() + [site.getusersitepackages()]]
stdlib = [os.path.realpath(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib")]
refused = []

def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()

def provided(origin):
    path = os.path.realpath(origin)
    if any(path.startswith(d + os.sep) for d in [os.path.realpath(verl_dir), os.path.realpath(repo)]):
        return True
    for d in sites:  # site-packages first: a virtual environment may live below the standard library's dir
        if path.startswith(d + os.sep):
            top = os.path.relpath(path, d).split(os.sep)[0].split(".")[0]
            return any(norm(dist) in allowed for dist in owners.get(top, []))
    return any(path.startswith(d + os.sep) for d in stdlib)

class Filtered:
    # the path finder, blind to top-level modules that nothing allowed provides

    @staticmethod
    def find_spec(name, path=None, target=None):
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if path is not None or spec is None or name in sys.stdlib_module_names:
            return spec
        if spec.origin in (None, "built-in", "frozen") or provided(spec.origin):
            return spec
        refused.append(name)
        return None

    @staticmethod
    def find_distributions(*args, **kwargs):
        return importlib.machinery.PathFinder.find_distributions(*args, **kwargs)

    @staticmethod
    def invalidate_caches():
        importlib.machinery.PathFinder.invalidate_caches()

sys.meta_path[:] = [Filtered if f is importlib.machinery.PathFinder else f for f in sys.meta_path]
try:
    import omegaconf
    import verl.utils.dataset.rl_dataset
    error = None
except ImportError as exc:
    error = f"{type(exc).__name__}: {exc}"
print(json.dumps({"error": error, "refused": sorted(set(refused))}))
"""


def test_verl_dataset_imports_resolve_in_var_verl_or_the_declared_dependencies() -> None:
    closure = set(freeze_constraints.closure([("sluice-rl", TEST_EXTRAS)]))
    reached = {"pydantic", "pyarrow", "datasets"}  # a base dependency, one of its own, a dev extra
    assert reached <= closure, f"the dependency walk missed {reached - closure}"
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(VERL_DIR), str(REPO), json.dumps(sorted(closure))],
        capture_output=True, text=True, timeout=540, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["error"] is None, (
        f"verl's dataset code needs a module that neither var/verl nor sluice-rl's declared dependencies "
        f"provide ({result['error']}; refused: {result['refused']}): add it to VERL_PINS in infra/install.sh"
    )
