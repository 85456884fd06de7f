"""Publishing: the write-ahead log; every event is on disk before the agent's response completes.

Every event the proxy accepts is appended here first; it is forgotten only once the broker acknowledged
it. A SIGKILLed proxy therefore loses nothing it answered for: the next start replays the log's
unacknowledged tail, in order, before anything newer.

- **Group commit.** ``append`` only frames the event (no copy of its bytes, no system call) and buffers
  it. ``durable`` is what a response waits for: one ``os.write`` hands every buffered record to the
  kernel, from every request that appended since the last write. Without ``fsync`` the first response
  that needs it writes at once (a page-cache write takes microseconds; waiting a loop turn for company
  would cost a busy proxy milliseconds), so no response waits for another. A record in the page cache
  survives the death of the process (SIGKILL, OOM kill). With ``fsync`` the write is followed by one
  ``fdatasync`` in a worker thread; responses that arrive while it runs form the next group: one write
  and one sync for all of them, started the moment the previous sync returns.
- **Layout.** ``<dir>/<first_seq:020d>.seg`` segment files of records (``wal_format``) and
  ``cursor.json`` = the first unacknowledged seq, the seqs acknowledged out of order above it, and the
  last acknowledged offset per topic partition (where a check for already-delivered records starts).
  Seqs are dense: every appended record takes the next one. A torn tail (crash mid-write of the machine)
  fails its length/CRC check and is cut off at open, with a warning.
- **Delivered, then landed.** ``ack`` says the broker holds a record. With ``keep_until_landed`` (the
  embedded broker, whose topics live in memory) that is not enough to forget it: the record is
  *delivered* (not sent again to this cluster) and is kept until ``land`` says its stage group processed
  it into state that survives a broker restart (``landing.py``). ``forget_deliveries`` (a new, empty
  cluster) makes every delivered, unlanded record due for sending again, in log order. Deliveries live in
  memory only: after a crash of the proxy its unlanded tail is checked against the broker
  (``delivery_check``) from ``positions``, the last landed offset per partition.
- **Trimming** (``save_cursor`` -> ``_trim``). A segment is deleted once every record in it is
  acknowledged (landed, with ``keep_until_landed``); segments rotate at ``segment_bytes`` or
  ``segment_max_age_s``, so acknowledged raw traffic stays on disk at most about that long after it
  landed. With everything acknowledged the files are removed.

Single-threaded: only the publisher, on the proxy's event loop, touches it (the fsync thread only syncs a
file descriptor).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path

from pipeline.proxy.exceptions import SpoolError
from pipeline.proxy.publishing.deliveries import Deliveries
from pipeline.proxy.publishing.wal_format import LogRecord, frame, read_records, scan

log = logging.getLogger(__name__)

_CURSOR = "cursor.json"

__all__ = ["LogRecord", "WriteAheadLog"]


class WriteAheadLog:
    """Append-only log of encoded events with acknowledgement; ``depth`` = records not yet acknowledged."""

    def __init__(
        self,
        directory: Path,
        segment_bytes: int = 16 * 1024 * 1024,
        segment_max_age_s: float = 30.0,
        fsync: bool = False,
        keep_until_landed: bool = False,
    ) -> None:
        self.dir = Path(directory)
        self.keep_until_landed = keep_until_landed
        self.segment_bytes = segment_bytes
        self.segment_max_age_s = segment_max_age_s
        self.fsync = fsync
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise SpoolError(f"cannot create the write-ahead log directory {self.dir}: {err}") from None
        self.first_unacked = 0  # every record with seq below it is acknowledged
        self._acked: set[int] = set()  # acknowledged at or above first_unacked
        self.positions: dict[str, int] = {}  # "topic|partition" -> last acknowledged (landed) offset
        self.cluster: str | None = None  # the cluster the deliveries went to
        self._delivered = Deliveries()  # on the broker, not landed yet (``keep_until_landed``)
        self._fd: int | None = None
        self._seg_path: Path | None = None
        self._seg_size = 0
        self._seg_opened = 0.0
        self._seg_first: list[tuple[int, Path]] = []  # (first seq, path), oldest first
        self._buffer: list[bytes] = []  # frames and values waiting for the group's write
        self._written_seq = -1  # every record up to it is in the kernel
        self._synced_seq = -1  # every record up to it is synced (``fsync`` only)
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []  # (seq to be synced, its response)
        self._syncing = False
        self._closing_fds: list[int] = []
        self._read: tuple[int, int] | None = None  # (segment index, byte offset) of the replay reader
        self._dirty = False
        self.next_seq = 0
        self.depth = 0
        self._load()

    # ------------------------------------------------------------------ opening

    def _load(self) -> None:
        cursor = self.dir / _CURSOR
        if cursor.exists():
            try:
                data = json.loads(cursor.read_text())
                self.first_unacked = int(data["first_unacked"])
                self._acked = {int(s) for s in data.get("acked", [])}
                self.positions = {str(k): int(v) for k, v in data.get("positions", {}).items()}
                self.cluster = data.get("cluster")
            except (ValueError, KeyError, TypeError, AttributeError) as err:
                raise SpoolError(f"write-ahead log cursor {cursor} is unreadable: {err}") from None
        max_seq = -1
        for path in sorted(self.dir.glob("*.seg")):
            data = path.read_bytes()
            records, end, torn = scan(data)
            if torn:
                log.warning(
                    "write-ahead log %s: torn record at byte %d cut off (crash while writing?)",
                    path.name,
                    end,
                )
                with open(path, "r+b") as f:
                    f.truncate(end)
            if not records:
                path.unlink(missing_ok=True)
                continue
            self._seg_first.append((records[0].seq, path))
            for rec in records:
                max_seq = max(max_seq, rec.seq)
                if self.live(rec.seq):
                    self.depth += 1
        self.next_seq = max(max_seq + 1, self.first_unacked)
        self._written_seq = self._synced_seq = self.next_seq - 1  # what a past run left is on disk
        if self.depth == 0:
            self._remove_segments()
        log.debug("write-ahead log %s: %d unacknowledged records", self.dir, self.depth)

    def live(self, seq: int) -> bool:
        """Still to be sent: not acknowledged and not delivered to the current cluster."""
        return seq >= self.first_unacked and seq not in self._acked and seq not in self._delivered

    @property
    def unlanded(self) -> int:
        """Records delivered to the broker and kept until they land."""
        return len(self._delivered)

    # ------------------------------------------------------------------ appending and group commit

    def append(self, topic: str, key: bytes, value: bytes, t: float = 0.0) -> LogRecord:
        """Give the event the next seq and buffer its frame (no copy of ``value``, no system call);
        ``durable`` makes it durable."""
        rec = LogRecord(self.next_seq, topic, key, value, t)
        self.next_seq += 1
        if self._fd is None or self._rotate_due():
            self._flush_buffer()
            self._open_segment(rec.seq)
        head, size = frame(rec)
        self._buffer.append(head)
        self._buffer.append(value)
        self._seg_size += size
        self.depth += 1
        return rec

    def _rotate_due(self) -> bool:
        return self._seg_size >= self.segment_bytes or (
            time.monotonic() - self._seg_opened >= self.segment_max_age_s
        )

    def _open_segment(self, first_seq: int) -> None:
        self._close_segment()
        path = self.dir / f"{first_seq:020d}.seg"
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        except OSError as err:
            raise SpoolError(f"cannot open write-ahead log segment {path}: {err}") from None
        self._seg_path, self._seg_size, self._seg_opened = path, 0, time.monotonic()
        self._seg_first.append((first_seq, path))

    def _close_segment(self, sync: bool = True) -> None:
        if self._fd is None:
            return
        if self.fsync and sync:
            os.fdatasync(self._fd)  # everything written to it is synced: the running group's too
            self._synced_seq = self._written_seq
        if self._syncing:
            self._closing_fds.append(self._fd)  # the sync thread still holds it: closed once it returns
        else:
            os.close(self._fd)
        self._fd = None

    def _flush_buffer(self) -> None:
        """One ``os.write`` of every buffered record (the group's write)."""
        if not self._buffer:
            return
        data = b"".join(self._buffer)
        self._buffer.clear()
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as err:
            raise SpoolError(f"cannot write the write-ahead log {self._seg_path}: {err}") from None
        self._written_seq = self.next_seq - 1

    def commit(self) -> None:
        """Hand every buffered record to the kernel now (one write); with ``fsync`` it is synced by the
        next group's ``fdatasync``."""
        self._flush_buffer()

    def durable(self) -> asyncio.Future[None] | None:
        """What a response waits for: None when everything appended so far is durable now, else a future
        done once it is. Without ``fsync``: the buffer is written now, in one write, and the answer is
        None. With ``fsync``: the caller joins the running group's successor (or starts a group: one
        write, one ``fdatasync`` in a worker thread) and the future is done after that sync."""
        if not self.fsync:
            self._flush_buffer()
            return None
        target = self.next_seq - 1
        if self._synced_seq >= target:
            return None
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((target, fut))
        if not self._syncing:
            self._start_sync()
        return fut

    def _start_sync(self) -> None:
        self._flush_buffer()
        if self._fd is None:  # nothing open: every record written was synced when its segment closed
            self._synced_seq = self._written_seq
            self._release_synced()
            return
        self._syncing = True
        target = self._written_seq
        fut = asyncio.get_running_loop().run_in_executor(None, os.fdatasync, self._fd)
        fut.add_done_callback(lambda f: self._synced(f, target))

    def _synced(self, fut: asyncio.Future[None], target: int) -> None:
        self._syncing = False
        for fd in self._closing_fds:
            os.close(fd)
        self._closing_fds.clear()
        err = fut.exception()
        if err is not None:
            log.error("write-ahead log fdatasync failed: %s", err)
        self._synced_seq = max(self._synced_seq, target)
        self._release_synced()
        if self._waiters:
            self._start_sync()  # the next group: everything appended while this sync ran

    def _release_synced(self) -> None:
        waiting = []
        for target, fut in self._waiters:
            if target <= self._synced_seq:
                if not fut.done():
                    fut.set_result(None)
            else:
                waiting.append((target, fut))
        self._waiters = waiting

    # ------------------------------------------------------------------ replay

    def rewind(self) -> None:
        """Read again from the oldest unacknowledged record."""
        self._read = (0, 0) if self._seg_first else None

    def next_batch(self, limit: int) -> list[LogRecord]:
        """Up to ``limit`` unacknowledged records after the last one handed out, in append order."""
        self._flush_buffer()
        if self._read is None:
            self.rewind()
            if self._read is None:
                return []
        index, offset = self._read
        out: list[LogRecord] = []
        while index < len(self._seg_first) and len(out) < limit:
            records, offset, at_eof = read_records(self._seg_first[index][1], offset, limit - len(out))
            out.extend(r for r in records if self.live(r.seq))
            if not at_eof:
                continue
            if index + 1 >= len(self._seg_first):
                break
            index, offset = index + 1, 0
        self._read = (index, offset)
        return out

    def unacked(self) -> Iterator[LogRecord]:
        """Every unacknowledged record, in order, without moving the replay reader."""
        self._flush_buffer()
        for _, path in list(self._seg_first):
            offset, at_eof = 0, False
            while not at_eof:
                records, offset, at_eof = read_records(path, offset, 1000)
                yield from (r for r in records if self.live(r.seq))

    @property
    def at_end(self) -> bool:
        """The replay reader has handed out every record appended so far."""
        if self._buffer:
            return False
        if self._read is None:
            return self.depth == 0
        index, offset = self._read
        if index < len(self._seg_first) - 1:
            return False
        if index >= len(self._seg_first):
            return True
        path = self._seg_first[index][1]
        return offset >= (self._seg_size if path == self._seg_path else path.stat().st_size)

    # ------------------------------------------------------------------ acknowledging and trimming

    def ack(
        self,
        seq: int,
        topic: str | None = None,
        partition: int | None = None,
        offset: int = -1,
        landed: bool = False,
    ) -> None:
        """The broker holds record ``seq`` (at ``topic``/``partition``/``offset`` when known). With
        ``keep_until_landed`` the record is kept until ``land`` covers it, unless ``landed`` says that
        being on the broker is all this record needs."""
        if not self.live(seq):
            return
        self.depth -= 1
        if (
            self.keep_until_landed
            and not landed
            and topic is not None
            and partition is not None
            and offset >= 0
        ):
            self._delivered.add(seq, f"{topic}|{partition}", offset)
            return
        if topic is not None and partition is not None and offset >= 0:
            tp = f"{topic}|{partition}"
            if offset > self.positions.get(tp, -1):
                self.positions[tp] = offset
        self._acknowledge(seq)

    def _acknowledge(self, seq: int) -> None:
        self._acked.add(seq)
        self._dirty = True
        while self.first_unacked in self._acked:
            self._acked.discard(self.first_unacked)
            self.first_unacked += 1

    def land(self, topic: str, partition: int, below: int) -> int:
        """Every record delivered to ``topic``/``partition`` at an offset below ``below`` has landed: it
        is acknowledged (and trimmed in time). Returns how many landed."""
        tp = f"{topic}|{partition}"
        landed = self._delivered.land(tp, below)
        for seq, offset in landed:
            if offset > self.positions.get(tp, -1):
                self.positions[tp] = offset
            self._acknowledge(seq)
        return len(landed)

    def forget_deliveries(self, cluster: str | None) -> int:
        """The broker is a new cluster (``cluster``): every record delivered to the old one and not landed
        is to be sent again, in log order. Returns how many."""
        n = self._delivered.forget()
        self.depth += n
        self.positions.clear()  # offsets of the old cluster say nothing about the new one
        self.cluster = cluster
        self._dirty = True
        return n

    def save_cursor(self) -> None:
        """Persist the acknowledgement state (atomic rename) and delete fully acknowledged segments."""
        if not self._dirty:
            return
        if self.depth == 0 and not self._buffer and self.first_unacked == self.next_seq:
            self._remove_segments()
        else:
            self._trim()
        tmp = self.dir / (_CURSOR + ".tmp")
        state = {
            "first_unacked": self.first_unacked,
            "acked": sorted(self._acked),
            "positions": self.positions,
            "cluster": self.cluster,
        }
        tmp.write_text(json.dumps(state))
        os.replace(tmp, self.dir / _CURSOR)
        self._dirty = False

    def _trim(self) -> None:
        """Delete leading segments whose records all lie below ``first_unacked``."""
        removed = 0
        while len(self._seg_first) > 1 and self._seg_first[1][0] <= self.first_unacked:
            self._seg_first.pop(0)[1].unlink(missing_ok=True)
            removed += 1
        if removed and self._read is not None:
            index, offset = self._read
            self._read = (index - removed, offset) if index >= removed else (0, 0)

    def _remove_segments(self) -> None:
        self._close_segment(sync=False)  # every record in it is acknowledged: nothing left to make durable
        for _, path in self._seg_first:
            path.unlink(missing_ok=True)
        self._seg_first.clear()
        self._seg_path = None
        self._read = None

    def close(self) -> None:
        """Write and sync what is buffered, persist the cursor, close the segment."""
        self._flush_buffer()
        if self._fd is not None:
            os.fdatasync(self._fd)
        self._synced_seq = self._written_seq
        self._release_synced()
        self._dirty = True
        self.save_cursor()
        self._close_segment()
