"""The proxy's write-ahead log: every event is on local disk before the agent's response completes.

Every event the proxy accepts is appended here first; it is forgotten only once the broker acknowledged
it. A SIGKILLed proxy therefore loses nothing it answered for: the next start replays the log's
unacknowledged tail, in order, before anything newer.

- **Group commit.** ``append`` only adds to a buffer; one ``os.write`` per event-loop turn hands every
  buffered record to the kernel (``commit``), so concurrent requests share a write. A record in the page
  cache survives the death of the process (SIGKILL, OOM kill). With ``fsync`` the same batch is also
  ``fdatasync``'d in a worker thread before its waiters are released (survives the machine too, at the
  disk's flush latency).
- **Layout.** ``<dir>/<first_seq:020d>.seg`` segment files of records
  ``[u32 body_len][u32 crc32(body)][body = u64 seq | u16 topic_len | topic | u32 key_len | key | value]``
  and ``cursor.json`` = the first unacknowledged seq, the seqs acknowledged out of order above it, and the
  last acknowledged offset per topic partition (where a check for already-delivered records starts).
  Seqs are dense: every appended record takes the next one. A torn tail (crash mid-write of the machine)
  fails its length/CRC check and is cut off at open, with a warning.
- **Trimming.** A segment is deleted once every record in it is acknowledged; segments rotate at
  ``segment_bytes`` or ``segment_max_age_s``, so acknowledged raw traffic stays on disk at most about that
  long. With everything acknowledged the files are removed at once.

Single-threaded: only the publisher, on the proxy's event loop, touches it (the fsync thread only syncs a
file descriptor).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import struct
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pipeline.proxy.exceptions import SpoolError

log = logging.getLogger(__name__)

_HEAD = struct.Struct(">II")
_SEQ_TOPIC = struct.Struct(">QH")
_KEYLEN = struct.Struct(">I")
_CURSOR = "cursor.json"


@dataclass(slots=True)
class LogRecord:
    seq: int
    topic: str
    key: bytes
    value: bytes
    t: float = 0.0  # monotonic time it was published (memory only, for the lag metric)


def encode_record(rec: LogRecord) -> bytes:
    topic = rec.topic.encode()
    body = b"".join(
        (_SEQ_TOPIC.pack(rec.seq, len(topic)), topic, _KEYLEN.pack(len(rec.key)), rec.key, rec.value)
    )
    return _HEAD.pack(len(body), zlib.crc32(body)) + body


def _decode(body: bytes) -> LogRecord:
    seq, tlen = _SEQ_TOPIC.unpack_from(body, 0)
    pos = _SEQ_TOPIC.size
    topic = body[pos : pos + tlen].decode()
    pos += tlen
    (klen,) = _KEYLEN.unpack_from(body, pos)
    pos += _KEYLEN.size
    return LogRecord(seq, topic, body[pos : pos + klen], body[pos + klen :])


def scan(data: bytes) -> tuple[list[LogRecord], int, bool]:
    """Intact records of a segment's bytes: (records, end of the last intact one, torn tail found)."""
    out: list[LogRecord] = []
    pos = 0
    while pos + _HEAD.size <= len(data):
        blen, crc = _HEAD.unpack_from(data, pos)
        body = data[pos + _HEAD.size : pos + _HEAD.size + blen]
        if len(body) != blen or zlib.crc32(body) != crc:
            break
        pos += _HEAD.size + blen
        out.append(_decode(body))
    return out, pos, pos < len(data)


class WriteAheadLog:
    """Append-only log of encoded events with acknowledgement; ``depth`` = records not yet acknowledged."""

    def __init__(
        self,
        directory: Path,
        segment_bytes: int = 16 * 1024 * 1024,
        segment_max_age_s: float = 30.0,
        fsync: bool = False,
    ) -> None:
        self.dir = Path(directory)
        self.segment_bytes = segment_bytes
        self.segment_max_age_s = segment_max_age_s
        self.fsync = fsync
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise SpoolError(f"cannot create the write-ahead log directory {self.dir}: {err}") from None
        self.first_unacked = 0  # every record with seq below it is acknowledged
        self._acked: set[int] = set()  # acknowledged at or above first_unacked
        self.positions: dict[str, int] = {}  # "topic|partition" -> last acknowledged offset
        self._fd: int | None = None
        self._seg_path: Path | None = None
        self._seg_size = 0
        self._seg_opened = 0.0
        self._seg_first: list[tuple[int, Path]] = []  # (first seq, path), oldest first
        self._buffer: list[bytes] = []
        self._waiters: list[asyncio.Future[None]] = []
        self._commit_scheduled = False
        self._syncing = False
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
        if self.depth == 0:
            self._remove_segments()
        log.debug("write-ahead log %s: %d unacknowledged records", self.dir, self.depth)

    def live(self, seq: int) -> bool:
        return seq >= self.first_unacked and seq not in self._acked

    # ------------------------------------------------------------------ appending and group commit

    def append(self, topic: str, key: bytes, value: bytes, t: float = 0.0) -> LogRecord:
        """Give the event the next seq and buffer it; ``commit``/``wait_durable`` makes it durable."""
        rec = LogRecord(self.next_seq, topic, key, value, t)
        self.next_seq += 1
        if self._fd is None or self._rotate_due():
            self._flush_buffer()
            self._open_segment(rec.seq)
        data = encode_record(rec)
        self._buffer.append(data)
        self._seg_size += len(data)
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

    def _close_segment(self) -> None:
        if self._fd is not None:
            if self.fsync:
                os.fdatasync(self._fd)
            os.close(self._fd)
            self._fd = None

    def _flush_buffer(self) -> None:
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

    @property
    def uncommitted(self) -> bool:
        return bool(self._buffer) or bool(self._waiters)

    def wait_durable(self) -> asyncio.Future[None]:
        """A future done once everything appended so far is durable (written; with ``fsync``, synced)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        if not self.uncommitted:
            fut.set_result(None)
            return fut
        self._waiters.append(fut)
        if not self._commit_scheduled:
            self._commit_scheduled = True
            loop.call_soon(self._commit_soon)
        return fut

    def _commit_soon(self) -> None:
        self._commit_scheduled = False
        if self._syncing:
            return  # the running sync releases its waiters, then commits the rest
        self.commit()

    def commit(self) -> None:
        """Write the buffer (one write for every record appended since the last commit) and release its
        waiters; with ``fsync`` they are released after a ``fdatasync`` in a worker thread."""
        self._flush_buffer()
        waiters, self._waiters = self._waiters, []
        if not self.fsync or self._fd is None:
            _release(waiters)
            return
        self._syncing = True
        fd = self._fd
        fut = asyncio.get_running_loop().run_in_executor(None, os.fdatasync, fd)
        fut.add_done_callback(lambda f: self._synced(f, waiters))

    def _synced(self, fut: asyncio.Future[None], waiters: list[asyncio.Future[None]]) -> None:
        self._syncing = False
        err = fut.exception()
        if err is not None:
            log.error("write-ahead log fdatasync failed: %s", err)
        _release(waiters)
        if self._waiters:
            self.commit()

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
            records, offset, at_eof = _read_records(self._seg_first[index][1], offset, limit - len(out))
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
                records, offset, at_eof = _read_records(path, offset, 1000)
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

    def ack(self, seq: int, topic: str | None = None, partition: int | None = None, offset: int = -1) -> None:
        """The broker holds record ``seq`` (at ``topic``/``partition``/``offset`` when known)."""
        if topic is not None and partition is not None and offset >= 0:
            tp = f"{topic}|{partition}"
            if offset > self.positions.get(tp, -1):
                self.positions[tp] = offset
        if not self.live(seq):
            return
        self._acked.add(seq)
        self.depth -= 1
        self._dirty = True
        while self.first_unacked in self._acked:
            self._acked.discard(self.first_unacked)
            self.first_unacked += 1

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
        self._close_segment()
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
        _release(self._waiters)
        self._waiters = []
        self._dirty = True
        self.save_cursor()
        self._close_segment()


def _read_records(path: Path, offset: int, limit: int) -> tuple[list[LogRecord], int, bool]:
    """Up to ``limit`` intact records of one segment from ``offset``: (records, next offset, end reached)."""
    out: list[LogRecord] = []
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return out, offset, True
    with f:
        f.seek(offset)
        while len(out) < limit:
            head = f.read(_HEAD.size)
            if len(head) < _HEAD.size:
                return out, offset, True
            blen, crc = _HEAD.unpack(head)
            body = f.read(blen)
            if len(body) != blen or zlib.crc32(body) != crc:
                return out, offset, True  # cut off at open, so only a record not yet written
            offset += _HEAD.size + blen
            out.append(_decode(body))
    return out, offset, False


def _release(waiters: list[asyncio.Future[None]]) -> None:
    for fut in waiters:
        if not fut.done():
            fut.set_result(None)
