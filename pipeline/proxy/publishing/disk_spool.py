"""An append-only, crash-tolerant FIFO of encoded events on local disk (the proxy's spool).

Events land here only while the broker is unreachable or slower than the traffic (and, at shutdown,
whatever was not acknowledged yet): raw traffic does not touch the disk otherwise.

Layout: ``<dir>/<first_seq:020d>.seg`` segment files of records
``[u32 body_len][u32 crc32(body)][body = u64 seq | u16 topic_len | topic | u32 key_len | key | value]``
and ``cursor.json`` = the first unacknowledged seq plus the seqs acknowledged out of order above it.
A torn tail record (crash mid-write) fails its length/CRC check and is dropped, with a warning.
Records are read back in append order; a record is forgotten only after ``ack`` (its delivery report
said it is durable). Single-threaded: only the publisher (on the event loop) touches it.
"""

from __future__ import annotations

import json
import logging
import os
import struct
import zlib
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from pipeline.proxy.exceptions import SpoolError

log = logging.getLogger(__name__)

_HEAD = struct.Struct(">II")
_SEQ_TOPIC = struct.Struct(">QH")
_KEYLEN = struct.Struct(">I")
_CURSOR = "cursor.json"


@dataclass(slots=True)
class SpoolRecord:
    seq: int
    topic: str
    key: bytes
    value: bytes
    t: float = 0.0  # monotonic time it was published (memory only, for the lag metric)


def _encode(rec: SpoolRecord) -> bytes:
    topic = rec.topic.encode()
    body = b"".join(
        (_SEQ_TOPIC.pack(rec.seq, len(topic)), topic, _KEYLEN.pack(len(rec.key)), rec.key, rec.value)
    )
    return _HEAD.pack(len(body), zlib.crc32(body)) + body


def _decode(body: bytes) -> SpoolRecord:
    seq, tlen = _SEQ_TOPIC.unpack_from(body, 0)
    pos = _SEQ_TOPIC.size
    topic = body[pos : pos + tlen].decode()
    pos += tlen
    (klen,) = _KEYLEN.unpack_from(body, pos)
    pos += _KEYLEN.size
    return SpoolRecord(seq, topic, body[pos : pos + klen], body[pos + klen :])


class DiskSpool:
    """FIFO of records on disk with acknowledgement; ``depth`` = records not yet acknowledged."""

    def __init__(self, directory: Path, segment_bytes: int = 16 * 1024 * 1024) -> None:
        self.dir = Path(directory)
        self.segment_bytes = segment_bytes
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise SpoolError(f"cannot create spool directory {self.dir}: {err}") from None
        self._first_unacked = 0  # every record with seq below it is acknowledged
        self._acked: set[int] = set()  # acknowledged at or above _first_unacked
        self._read_order: deque[int] = deque()  # seqs handed out by next_batch, not yet acknowledged
        self._writer = None
        self._writer_path: Path | None = None
        self._writer_size = 0
        self._read_seg: Path | None = None
        self._read_pos = 0
        self.depth = 0
        self.max_seq = -1
        self._dirty = False
        self._load()

    # ------------------------------------------------------------------ files

    def _segments(self) -> list[Path]:
        return sorted(self.dir.glob("*.seg"))

    def _scan(self, path: Path) -> list[tuple[int, SpoolRecord]]:
        """(end offset, record) for every intact record of a segment."""
        out = []
        data = path.read_bytes()
        pos = 0
        while pos + _HEAD.size <= len(data):
            blen, crc = _HEAD.unpack_from(data, pos)
            body = data[pos + _HEAD.size : pos + _HEAD.size + blen]
            if len(body) != blen or zlib.crc32(body) != crc:
                log.warning("spool %s: torn record at byte %d dropped (crash while writing?)", path.name, pos)
                break
            pos += _HEAD.size + blen
            out.append((pos, _decode(body)))
        return out

    def _load(self) -> None:
        cursor = self.dir / _CURSOR
        if cursor.exists():
            try:
                data = json.loads(cursor.read_text())
                self._first_unacked = int(data["first_unacked"])
                self._acked = {int(s) for s in data.get("acked", [])}
            except (ValueError, KeyError, TypeError) as err:
                raise SpoolError(f"spool cursor {cursor} is unreadable: {err}") from None
        for seg in self._segments():
            for _, rec in self._scan(seg):
                self.max_seq = max(self.max_seq, rec.seq)
                if self._live(rec.seq):
                    self.depth += 1
        if self.depth == 0:
            self.reset()
        else:
            self.rewind()

    def _live(self, seq: int) -> bool:
        return seq >= self._first_unacked and seq not in self._acked

    def _open_writer(self, first_seq: int) -> None:
        self._close_writer()
        self._writer_path = self.dir / f"{first_seq:020d}.seg"
        self._writer = open(self._writer_path, "ab")  # noqa: SIM115 - long-lived, closed in close()
        self._writer_size = self._writer.tell()

    def _close_writer(self, sync: bool = False) -> None:
        if self._writer is not None:
            self._writer.flush()
            if sync:
                os.fsync(self._writer.fileno())
            self._writer.close()
            self._writer = None

    # ------------------------------------------------------------------ writing

    def append(self, rec: SpoolRecord) -> None:
        if self._writer is None or self._writer_size >= self.segment_bytes:
            self._open_writer(rec.seq)
        data = _encode(rec)
        try:
            self._writer.write(data)
        except OSError as err:
            raise SpoolError(f"cannot write spool {self._writer_path}: {err}") from None
        self._writer_size += len(data)
        self.depth += 1
        self.max_seq = max(self.max_seq, rec.seq)

    def prepend(self, records: list[SpoolRecord]) -> None:
        """Write records whose seqs are below every record already spooled (deliveries that failed while
        newer events were being spooled): a segment of their own, which sorts first."""
        if not records:
            return
        records = sorted(records, key=lambda r: r.seq)
        segs = self._segments()
        if segs and int(segs[0].stem) <= records[-1].seq:
            raise SpoolError(
                f"prepend of seq {records[-1].seq} would break spool order (first {segs[0].name})"
            )
        path = self.dir / f"{records[0].seq:020d}.seg"
        try:
            with open(path, "ab") as f:
                f.write(b"".join(_encode(r) for r in records))
        except OSError as err:
            raise SpoolError(f"cannot write spool {path}: {err}") from None
        self.depth += len(records)
        self.max_seq = max(self.max_seq, records[-1].seq)
        self._first_unacked = min(self._first_unacked, records[0].seq)

    @property
    def next_seq(self) -> int:
        """The first seq a new record may take (above everything spooled or acknowledged)."""
        return max(self.max_seq + 1, self._first_unacked)

    def flush(self) -> None:
        if self._writer is not None:
            self._writer.flush()

    # ------------------------------------------------------------------ reading

    def rewind(self) -> None:
        """Read again from the oldest unacknowledged record (after a failed delivery attempt)."""
        segs = self._segments()
        self._read_seg = segs[0] if segs else None
        self._read_pos = 0
        self._read_order.clear()

    def next_batch(self, limit: int) -> list[SpoolRecord]:
        """Up to ``limit`` unacknowledged records after the last one handed out, in append order."""
        self.flush()
        if self._read_seg is None:
            segs = self._segments()
            self._read_seg, self._read_pos = (segs[0] if segs else None), 0
        out: list[SpoolRecord] = []
        while self._read_seg is not None and len(out) < limit:
            if self._read_seg.exists():
                for end, rec in self._scan_from(self._read_seg, self._read_pos, limit - len(out)):
                    self._read_pos = end
                    if self._live(rec.seq):
                        out.append(rec)
                        self._read_order.append(rec.seq)
                if len(out) >= limit:
                    break
            later = [s for s in self._segments() if s.name > self._read_seg.name]
            if not later:
                break
            self._read_seg, self._read_pos = later[0], 0
        return out

    def _scan_from(self, path: Path, offset: int, limit: int) -> list[tuple[int, SpoolRecord]]:
        out = []
        with open(path, "rb") as f:
            f.seek(offset)
            pos = offset
            while len(out) < limit:
                head = f.read(_HEAD.size)
                if len(head) < _HEAD.size:
                    break
                blen, crc = _HEAD.unpack(head)
                body = f.read(blen)
                if len(body) != blen or zlib.crc32(body) != crc:
                    break  # a record still being written (never happens single-threaded) or torn
                pos += _HEAD.size + blen
                out.append((pos, _decode(body)))
        return out

    # ------------------------------------------------------------------ acknowledging

    def ack(self, seq: int) -> None:
        if not self._live(seq):
            return
        self._acked.add(seq)
        self.depth -= 1
        self._dirty = True
        order = self._read_order
        while order and order[0] in self._acked:
            done = order.popleft()
            self._acked.discard(done)
            self._first_unacked = max(self._first_unacked, done + 1)
        if self.depth == 0 and not order:
            self.reset()

    def reset(self) -> None:
        """Everything is acknowledged: drop the files and start empty."""
        self._close_writer()
        for seg in self._segments():
            seg.unlink(missing_ok=True)
        self._first_unacked = max(self._first_unacked, self.max_seq + 1)
        self._acked.clear()
        self._read_order.clear()
        self._read_seg, self._read_pos = None, 0
        self.depth = 0
        self._dirty = True
        self.save_cursor()

    def save_cursor(self) -> None:
        """Persist the acknowledgement state (atomic rename) and drop fully acknowledged segments."""
        if not self._dirty:
            return
        self._acked = {s for s in self._acked if s >= self._first_unacked}
        tmp = self.dir / (_CURSOR + ".tmp")
        tmp.write_text(json.dumps({"first_unacked": self._first_unacked, "acked": sorted(self._acked)}))
        os.replace(tmp, self.dir / _CURSOR)
        self._dirty = False
        segs = self._segments()
        for seg, nxt in zip(segs, segs[1:], strict=False):
            if int(nxt.stem) <= self._first_unacked and seg != self._read_seg and seg != self._writer_path:
                seg.unlink(missing_ok=True)

    def close(self) -> None:
        """Persist the cursor and fsync the open segment (writes in between reach the OS page cache within
        the publisher's tick: they survive a crash of the process, not of the machine)."""
        self._dirty = True
        self.save_cursor()
        self._close_writer(sync=True)
