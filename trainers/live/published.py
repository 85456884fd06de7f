"""A learning line's published versions and what each trained on: what an erasure rebuilds from.

Per published version the line keeps the trajectory ids it trained on for the line's whole life (a few
bytes each), so an erasure always finds the first version that trained on an erased trajectory, however
long ago; and the rows themselves (token ids, advantages) for the newest ``max_rows``, so the rebuild
replays every update made since the untainted ancestor, not only the last few. Rows older than that are
let go (their version's ids stay): a rebuild that reaches back past them replays what is left, and says
how many rows it could not replay.

The learner keeps weight copies for only a few versions (``trainers.live.scopes.MAX_SNAPSHOTS``); the line
must not be cut to that length, or an erasure that reaches a version older than the copies goes unseen and
the line keeps training on the erased data's weights.

The line lives in the driver's memory. Once a rebuild has decided what to replay, the rows it takes from
here go to disk with the rebuild's plan (``trainers.live.rebuild_plan``, under
``<output_dir>/rebuild/``) until the rebuilt version is published, so a restart resumes an unfinished
rebuild; an erasure drops its rows from a pending plan too.

    line = PublishedLine()
    line.append("7", rows)
    first = line.first_hit(erased)              # index of the first tainted version, or None
    replay, let_go, erased_rows = line.replay_after(keep, erased)
    batches = coalesce(replay, 16)               # in updates of at least 16 rows
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from trainers.live.samples import LiveRow

MAX_REPLAY_ROWS = 20_000  # rows kept per line for rebuilds (older versions keep their trajectory ids)


class Replay(NamedTuple):
    """What a rebuild replays of a line: per version, its rows minus the erased ones."""

    batches: list[list[LiveRow]]
    let_go: int  # rows of those versions let go earlier, not replayable
    erased: int  # rows of those versions left out as erased


@dataclass
class Published:
    """One published version: its name, the trajectory ids it trained on, and its rows while kept."""

    version: str
    trajectory_ids: frozenset[str]
    rows: list[LiveRow]
    rows_dropped: int = 0


@dataclass
class PublishedLine:
    max_rows: int = MAX_REPLAY_ROWS
    entries: list[Published] = field(default_factory=list)

    def append(self, version: str, rows: list[LiveRow]) -> None:
        ids = frozenset(r.sample.trajectory_id for r in rows)
        self.entries.append(Published(version, ids, list(rows)))
        kept = sum(len(e.rows) for e in self.entries)
        for entry in self.entries:  # let the oldest rows go first; the ids stay
            if kept <= self.max_rows:
                break
            kept -= len(entry.rows)
            entry.rows_dropped += len(entry.rows)
            entry.rows = []

    def versions(self) -> list[str]:
        return [e.version for e in self.entries]

    def first_hit(self, erased: set[str]) -> int | None:
        """Index of the oldest version that trained on an erased trajectory (None: the line is clean)."""
        return next((i for i, e in enumerate(self.entries) if e.trajectory_ids & erased), None)

    def index_after(self, version: str) -> int:
        """How many entries to keep when the line goes back to ``version`` (0: back to its start)."""
        return next((i + 1 for i, e in enumerate(self.entries) if e.version == version), 0)

    def replay_after(self, keep: int, erased: set[str]) -> Replay:
        """Per version after the first ``keep``: its kept rows minus the erased ones; how many rows of
        those versions could not be replayed (let go earlier) and how many were left out as erased."""
        later = self.entries[keep:]
        replay = [[r for r in e.rows if r.sample.trajectory_id not in erased] for e in later]
        kept = sum(len(b) for b in replay)
        return Replay(replay, sum(e.rows_dropped for e in later), sum(len(e.rows) for e in later) - kept)

    def cut(self, keep: int) -> list[str]:
        """Drop every version after the first ``keep``; returns their names (the tainted ones)."""
        gone = [e.version for e in self.entries[keep:]]
        del self.entries[keep:]
        return gone


def coalesce(batches: list[list[LiveRow]], min_rows: int) -> list[list[LiveRow]]:
    """Consecutive replay batches merged, in order, until each holds at least ``min_rows`` rows (a short
    remainder joins the batch before it). An update whose erased rows were left out can shrink to a few
    rows, and each replayed update is a whole optimizer step: many small steps on a handful of rows each
    move the weights far more than the live updates that held them did. Batches are only ever joined
    whole, so each keeps its GRPO groups (and their zero-mean advantages) together."""
    out: list[list[LiveRow]] = []
    for batch in batches:
        if not batch:
            continue
        if out and len(out[-1]) < min_rows:
            out[-1] = out[-1] + batch
        else:
            out.append(list(batch))
    if len(out) > 1 and len(out[-1]) < min_rows:
        tail = out.pop()
        out[-1] = out[-1] + tail
    return out
