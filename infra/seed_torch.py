"""Give a new virtual environment the torch that the interpreter which made it already has, by linking the
installed files (hard links; a copy across file systems) instead of installing the wheel again.

A machine set up with ``pip install torch==2.13.0`` has the CPU build in its system Python; a fresh venv
cannot see it, and installing the same wheel again (about 750 MB unpacked) is the largest part of the
product's install. Only torch's own files (its RECORD) are linked, not the rest of the system's packages,
so the venv stays isolated; pip then sees ``torch==2.13.0`` as installed and adds only its small
dependencies. Nothing is done when the versions differ or the venv has a torch already.

    python3 infra/seed_torch.py .venv          # run with the interpreter that made .venv
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

WANTED = "2.13.0"  # the version infra/install_product.sh installs


def site_packages(venv: Path) -> Path:
    """The venv's purelib directory, as its own interpreter names it."""
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    )
    return Path(out.stdout.strip())


def seed(venv: Path) -> int:
    """Link this interpreter's torch into ``venv``; the number of files linked (0: nothing to do)."""
    try:
        dist = importlib.metadata.distribution("torch")
    except importlib.metadata.PackageNotFoundError:
        return 0
    if dist.version.split("+")[0] != WANTED or not dist.files:
        return 0
    target = site_packages(venv)
    if any(target.glob("torch-*.dist-info")):
        return 0
    linked = 0
    for rel in dist.files:
        if rel.parts and rel.parts[0] == "..":  # console scripts in bin/: pip does not need them
            continue
        src = Path(str(dist.locate_file(rel)))
        if not src.is_file():
            continue
        dst = target / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)
        linked += 1
    return linked


def main() -> None:
    venv = Path(sys.argv[1] if len(sys.argv) > 1 else ".venv")
    linked = seed(venv)
    if linked:
        print(f"linked this Python's torch {WANTED} into {venv} ({linked} files)")


if __name__ == "__main__":
    main()
