"""One real embedded-default stack (own broker, tiny model, proxy, two stage workers, sink) for this
package's modules, started once: the redaction-at-rest checks run on it first (file order: nothing has
been injected yet), then the faults are injected into it (``test_under_faults``). Each module sends its own
trajectories (its own seeds), so neither reads the other's."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

from app.config import load_config
from app.up import running_stack
from tests.system.conftest import Stack, stack_config


@pytest.fixture(scope="package")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("stack")
    # raw events stay in the write-ahead log until their segment rotates: a short age, so the checks of
    # what is at rest wait for that bound briefly
    path = stack_config(tmp, wal_segment_max_age_s=5)
    cfg = load_config(path)
    log = io.StringIO()
    with running_stack(cfg, path, log_path=tmp / "logs" / "up.log", sink=log) as sup:
        yield Stack(cfg, path, sup, log)
