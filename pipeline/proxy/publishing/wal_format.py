"""Publishing: the write-ahead log's record format (frame an event once, read intact records back).

A record is ``[u32 body_len][u32 crc32(body)][body = u64 seq | u16 topic_len | topic | u32 key_len | key
| value]``. ``value`` is the event's encoded bytes exactly as the producer sends them: an event is
serialised once, framed here without copying its value (the CRC runs over the header part, then on over
the value), and the log's group write joins the frames of every waiting event into one buffer. A record
whose length or CRC does not check out is a torn tail (a crash mid-write): reading stops there.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

HEAD = struct.Struct(">II")
_SEQ_TOPIC = struct.Struct(">QH")
_KEYLEN = struct.Struct(">I")


@dataclass(slots=True)
class LogRecord:
    seq: int
    topic: str
    key: bytes
    value: bytes
    t: float = 0.0  # monotonic time it was published (memory only, for the lag metric)


def frame(rec: LogRecord) -> tuple[bytes, int]:
    """The record's header (length, CRC, seq, topic, key): the value follows it unchanged. Returns
    (header, record size)."""
    topic = rec.topic.encode()
    meta = b"".join((_SEQ_TOPIC.pack(rec.seq, len(topic)), topic, _KEYLEN.pack(len(rec.key)), rec.key))
    body_len = len(meta) + len(rec.value)
    crc = zlib.crc32(rec.value, zlib.crc32(meta))
    return HEAD.pack(body_len, crc) + meta, HEAD.size + body_len


def encode_record(rec: LogRecord) -> bytes:
    """The whole record as one bytes object (tests and tools; the log writes ``frame`` + value)."""
    head, _ = frame(rec)
    return head + rec.value


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
    while pos + HEAD.size <= len(data):
        blen, crc = HEAD.unpack_from(data, pos)
        body = data[pos + HEAD.size : pos + HEAD.size + blen]
        if len(body) != blen or zlib.crc32(body) != crc:
            break
        pos += HEAD.size + blen
        out.append(_decode(body))
    return out, pos, pos < len(data)


def read_records(path: Path, offset: int, limit: int) -> tuple[list[LogRecord], int, bool]:
    """Up to ``limit`` intact records of one segment from ``offset``: (records, next offset, end reached)."""
    out: list[LogRecord] = []
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return out, offset, True
    with f:
        f.seek(offset)
        while len(out) < limit:
            head = f.read(HEAD.size)
            if len(head) < HEAD.size:
                return out, offset, True
            blen, crc = HEAD.unpack(head)
            body = f.read(blen)
            if len(body) != blen or zlib.crc32(body) != crc:
                return out, offset, True  # cut off at open, so only a record not yet written
            offset += HEAD.size + blen
            out.append(_decode(body))
    return out, offset, False
