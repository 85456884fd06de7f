"""Versions the join stage sent but the store never got: which carried join states must emit again.

On the embedded broker a trajectory version can be lost between the join stage's send (the state then
records it as emitted) and the sink's write: a broker restart empties the audited topic. When the stage
tables are carried into a new broker, each state that says "emitted version v" is checked against the
DuckDB store; where the store holds less, the carried state is rewritten to emit v again (same number,
same event id) as soon as a worker owns it (``governance.reward_join.reopen_unstored``). The store is
read with the sink stopped (its file is locked while it runs); without a store there is nothing to check.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import duckdb

from governance.reward_join import next_due_at, reopen_unstored
from pipeline.stages.settings import StagesSettings
from pipeline.stages.storage import decode_state, encode_state, is_erased_value, peek_due
from sinks.store import connect

log = logging.getLogger(__name__)


def stored_versions(cfg: StagesSettings, trajectory_ids: list[str]) -> dict[str, int] | None:
    """Highest stored version per trajectory id (absent: none stored); None when the store can't be read."""
    path = cfg.path(cfg.sink_database)
    if not trajectory_ids or not path.exists():
        return {}
    try:
        con = connect(path, read_only=True)
    except Exception as err:  # noqa: BLE001 - locked by a running sink, or unreadable: say so, carry as is
        log.warning("cannot read the store %s to check emitted versions: %s", path, err)
        return None
    try:
        rows = con.execute(
            "SELECT trajectory_id, max(version) FROM store.trajectory_versions "
            "WHERE trajectory_id IN (SELECT unnest($1)) GROUP BY 1",
            [trajectory_ids],
        ).fetchall()
    except duckdb.Error as err:
        log.warning("cannot read emitted versions from %s: %s", path, err)
        return None
    finally:
        con.close()
    return {tid: int(v) for tid, v in rows}


def reopened_states(cfg: StagesSettings, records: Iterable[tuple[bytes, bytes]]) -> dict[bytes, bytes]:
    """key -> rewritten value of every join state (``records``: the join_state table's key/values) whose
    last emitted version is not in the store."""
    emitted: dict[str, tuple[bytes, bytes]] = {}
    for key, value in records:
        if is_erased_value(value) or b'"emitted_version":' not in value:
            continue  # defaults are not serialized: no field, never emitted
        emitted[key.decode()] = (key, value)
    stored = stored_versions(cfg, list(emitted))
    if stored is None:
        return {}
    out: dict[bytes, bytes] = {}
    for tid, (key, value) in emitted.items():
        state = reopen_unstored(decode_state(value), stored.get(tid, 0))
        if state is not None:
            out[key] = encode_state(state, peek_due(value)[0], next_due_at(state, cfg.rewards))
    if out:
        log.info("%d trajectories emit their last version again (sent, never stored)", len(out))
    return out
