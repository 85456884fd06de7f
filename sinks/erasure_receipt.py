"""The erasure receipt: every place that held a copy, what the erasure removed there, what is left to do.

Places: DuckDB (rows deleted, by table), the compacted topics (tombstones), the raw and redacted topics
(not compactable: their copies expire with the topic's retention), the stage workers and their
changelogs (purged when they read the erasure event), every proxy's linking state (purged when it reads
the erasure topic), exports (from the registry of written exports, each manifest listing its
trajectories). Exports are rewritten without the erased trajectories (``sinks.export.rewrite``) and listed with
their paths. The weights (policy versions, pushed files, checkpoints) have their own place, filled by
``sinks.erasure_weights``.

    sluice erase --subject user-42     # prints this receipt
"""

from __future__ import annotations

import json
from pathlib import Path

from sinks.erasure_models import ErasurePlace, ErasureResult
from sinks.export.rewrite import rewrite_without
from sinks.settings import SinkSettings


def _hours(cfg: SinkSettings) -> str:
    return f"{cfg.topics.raw_retention_hours:g} h"


def registered_exports(cfg: SinkSettings) -> list[Path]:
    """Manifest paths of every export written with this config (the registry, oldest first)."""
    registry = cfg.path(cfg.sink.exports_registry)
    try:
        lines = registry.read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            out.append(Path(json.loads(line)["manifest"]))
        except (ValueError, KeyError, TypeError):
            continue
    return out


def register_export(cfg: SinkSettings, manifest: Path) -> None:
    registry = cfg.path(cfg.sink.exports_registry)
    registry.parent.mkdir(parents=True, exist_ok=True)
    with registry.open("a") as f:
        f.write(json.dumps({"manifest": str(manifest.resolve())}) + "\n")


def rewrite_exports(cfg: SinkSettings, ids: set[str]) -> tuple[list[str], list[str], int]:
    """Rewrite every registered export whose manifest lists an erased trajectory. Returns the files
    rewritten, the files that could not be (missing, unreadable), and the rows dropped."""
    done: list[str] = []
    failed: list[str] = []
    dropped = 0
    for manifest in registered_exports(cfg):
        try:
            data = json.loads(manifest.read_text())
        except (OSError, ValueError):
            continue
        if not ids & set(data.get("trajectory_ids") or []):
            continue
        path = str(manifest.with_name(data.get("file", "")))
        try:
            dropped += rewrite_without(manifest, ids)
            done.append(path)
        except (OSError, ValueError, KeyError) as err:
            failed.append(f"{path} ({type(err).__name__}: {err})")
    return done, failed, dropped


def build_receipt(cfg: SinkSettings, result: ErasureResult, ids: list[str]) -> list[ErasurePlace]:
    wanted = set(ids)
    deleted = ", ".join(f"{n} {t}" for t, n in sorted(result.rows_deleted.items()) if n) or "no rows held"
    topics = cfg.topics
    places = [
        ErasurePlace(
            place="duckdb", removed=f"{deleted}; ids kept in erased_trajectories (late versions dropped)"
        ),
        ErasurePlace(
            place="topics",
            removed=f"{result.tombstones} tombstones on {topics.name('trajectories_audited')} and "
            f"{topics.name('trajectories_train')}; erasure events on {topics.name('erasure')}",
            operator_action="on Kafka, compaction removes the older records behind the tombstones; "
            f"{topics.name('steps_raw')}, {topics.name('rewards_raw')} and {topics.name('deadletter')} "
            f"are not compactable: their copies expire with the {_hours(cfg)} raw retention, "
            f"{topics.name('steps_redacted')} with its own retention (delete their segments to end sooner)",
        ),
        ErasurePlace(
            place="stages",
            removed="each stage worker, on reading the erasure event: join state, step bodies and "
            "placeholders deleted (RocksDB compacted), a content-free marker kept for "
            f"{cfg.keep_erased_s / 86400:g} days so late rewards, re-deliveries and replays are "
            "dropped, tombstones sent after anything it emitted",
            operator_action="on Kafka, compaction of the stage changelog topics removes the older values",
        ),
        ErasurePlace(
            place="proxy",
            removed="each proxy, on reading the erasure topic: linking state (hashes only) forgotten, "
            "links.json rewritten, the erased ids refused (410) from then on",
        ),
    ]
    rewritten, failed, dropped = rewrite_exports(cfg, wanted)
    places.append(
        ErasurePlace(
            place="exports",
            removed=f"{dropped} rows dropped from {len(rewritten)} export files, manifests updated"
            if rewritten
            else "no registered export held them",
            operator_action=(
                "these exports could not be rewritten, delete them: " + "; ".join(failed) if failed else None
            ),
            paths=rewritten,
        )
    )
    return places
