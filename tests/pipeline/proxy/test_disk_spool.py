"""The disk spool: order, acknowledgement, restarts, torn writes, prepending failed deliveries (pure files)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.proxy.exceptions import SpoolError
from pipeline.proxy.publishing.disk_spool import DiskSpool, SpoolRecord


def _rec(seq: int) -> SpoolRecord:
    return SpoolRecord(seq, "topic", f"k{seq % 2}".encode(), f"v{seq}".encode())


def test_fifo_ack_and_restart(tmp_path: Path) -> None:
    spool = DiskSpool(tmp_path, segment_bytes=4096)
    for i in range(300):  # several segments
        spool.append(_rec(i))
    assert spool.depth == 300 and len(list(tmp_path.glob("*.seg"))) > 1
    first = spool.next_batch(100)
    assert [r.seq for r in first] == list(range(100))
    for r in first[:50]:
        spool.ack(r.seq)
    spool.ack(70)  # out of order: must not be sent again after a restart
    spool.close()

    again = DiskSpool(tmp_path, segment_bytes=4096)
    assert again.depth == 249 and again.next_seq == 300
    seqs = [r.seq for r in again.next_batch(1000)]
    assert seqs == [s for s in range(50, 300) if s != 70]
    for s in seqs:
        again.ack(s)
    assert again.depth == 0 and not list(tmp_path.glob("*.seg"))
    again.close()
    assert DiskSpool(tmp_path).next_seq == 300  # sequence numbers never go back


def test_rewind_resends_unacknowledged_only(tmp_path: Path) -> None:
    spool = DiskSpool(tmp_path)
    for i in range(5):
        spool.append(_rec(i))
    batch = spool.next_batch(5)
    spool.ack(batch[0].seq)
    spool.ack(batch[3].seq)
    spool.rewind()
    assert [r.seq for r in spool.next_batch(10)] == [1, 2, 4]


def test_prepend_keeps_failed_deliveries_in_front(tmp_path: Path) -> None:
    spool = DiskSpool(tmp_path)
    for i in (5, 6, 7):
        spool.append(_rec(i))
    spool.prepend([_rec(3), _rec(2), _rec(4)])
    spool.rewind()
    assert [r.seq for r in spool.next_batch(10)] == [2, 3, 4, 5, 6, 7]
    with pytest.raises(SpoolError):
        spool.prepend([_rec(9)])


def test_torn_tail_is_dropped(tmp_path: Path) -> None:
    spool = DiskSpool(tmp_path)
    for i in range(3):
        spool.append(_rec(i))
    spool.close()
    seg = next(tmp_path.glob("*.seg"))
    seg.write_bytes(seg.read_bytes()[:-3])  # a crash mid-write
    reopened = DiskSpool(tmp_path)
    assert reopened.depth == 2 and [r.seq for r in reopened.next_batch(10)] == [0, 1]
