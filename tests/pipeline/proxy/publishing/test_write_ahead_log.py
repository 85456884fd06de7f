"""The write-ahead log: order, acknowledgement, restarts, torn writes, group commit, trimming (pure files)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from pipeline.proxy.publishing.write_ahead_log import WriteAheadLog


def _fill(wal: WriteAheadLog, n: int) -> None:
    for i in range(n):
        wal.append("topic", f"k{i % 2}".encode(), f"v{i}".encode())


def test_order_ack_and_restart(tmp_path: Path) -> None:
    wal = WriteAheadLog(tmp_path, segment_bytes=4096)
    _fill(wal, 300)  # several segments
    assert wal.depth == 300
    first = wal.next_batch(100)
    assert [r.seq for r in first] == list(range(100))
    assert len(list(tmp_path.glob("*.seg"))) > 1
    for r in first[:50]:
        wal.ack(r.seq, "topic", 0, r.seq)
    wal.ack(70, "topic", 1, 7)  # out of order: must not be sent again after a restart
    wal.close()

    again = WriteAheadLog(tmp_path, segment_bytes=4096)
    assert again.depth == 249 and again.next_seq == 300
    assert again.positions == {"topic|0": 49, "topic|1": 7}
    seqs = [r.seq for r in again.next_batch(1000)]
    assert seqs == [s for s in range(50, 300) if s != 70]
    assert [r.seq for r in again.unacked()] == seqs
    for s in seqs:
        again.ack(s)
    again.save_cursor()
    assert again.depth == 0 and not list(tmp_path.glob("*.seg"))  # everything acknowledged: no raw data left
    again.close()
    assert WriteAheadLog(tmp_path).next_seq == 300  # sequence numbers never go back


def test_records_written_by_a_killed_process_are_read_back(tmp_path: Path) -> None:
    """What ``commit`` wrote is in the kernel's page cache: a process that never closes the log (SIGKILL)
    leaves every committed record behind."""
    wal = WriteAheadLog(tmp_path)
    _fill(wal, 5)
    wal.commit()
    wal.append("topic", b"k", b"never committed")  # still in the process's buffer: lost with it
    reopened = WriteAheadLog(tmp_path)  # `wal` is never closed
    assert [r.value for r in reopened.next_batch(10)] == [f"v{i}".encode() for i in range(5)]


def test_rewind_resends_unacknowledged_only(tmp_path: Path) -> None:
    wal = WriteAheadLog(tmp_path)
    _fill(wal, 5)
    batch = wal.next_batch(5)
    wal.ack(batch[0].seq)
    wal.ack(batch[3].seq)
    assert wal.at_end
    wal.rewind()
    assert not wal.at_end
    assert [r.seq for r in wal.next_batch(10)] == [1, 2, 4]
    wal.append("topic", b"k", b"new")
    assert not wal.at_end and [r.seq for r in wal.next_batch(10)] == [5]


def test_torn_tail_is_cut_off_and_appends_continue(tmp_path: Path) -> None:
    wal = WriteAheadLog(tmp_path)
    _fill(wal, 3)
    wal.close()
    seg = next(tmp_path.glob("*.seg"))
    seg.write_bytes(seg.read_bytes()[:-3])  # a machine crash mid-write
    reopened = WriteAheadLog(tmp_path)
    assert reopened.depth == 2 and reopened.next_seq == 2
    reopened.append("topic", b"k", b"after")
    reopened.close()
    assert [r.value for r in WriteAheadLog(tmp_path).next_batch(10)] == [b"v0", b"v1", b"after"]


class _Counting:
    """Counts the log's ``os.write`` and ``os.fdatasync`` calls (the real ones still run)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.writes = self.syncs = 0
        real_write, real_sync = os.write, os.fdatasync

        def write(fd: int, data: bytes) -> int:
            self.writes += 1
            return real_write(fd, data)

        def sync(fd: int) -> None:
            time.sleep(0.02)  # a disk's flush: responses arriving meanwhile form the next group
            self.syncs += 1
            real_sync(fd)

        monkeypatch.setattr(os, "write", write)
        monkeypatch.setattr(os, "fdatasync", sync)


def test_one_write_serves_every_event_appended_before_it(tmp_path: Path, monkeypatch) -> None:
    wal = WriteAheadLog(tmp_path)
    count = _Counting(monkeypatch)
    _fill(wal, 20)  # twenty events waiting (no system call yet)
    assert count.writes == 0
    assert wal.durable() is None  # written now, in one write: nothing to wait for
    assert count.writes == 1 and wal.durable() is None and count.writes == 1
    assert [r.seq for r in WriteAheadLog(tmp_path).next_batch(100)] == list(range(20))


def test_fsync_group_commit_shares_one_sync_per_group(tmp_path: Path, monkeypatch) -> None:
    """Responses arriving while a sync runs wait together for one write and one fdatasync."""
    wal = WriteAheadLog(tmp_path, fsync=True)
    count = _Counting(monkeypatch)

    async def request(i: int) -> int:
        await asyncio.sleep(0.001 * (i % 5))  # concurrent requests, arriving over a few milliseconds
        wal.append("topic", b"k", f"v{i}".encode())
        waiting = wal.durable()
        assert waiting is not None
        await waiting
        return i

    async def scenario() -> None:
        done = await asyncio.gather(*(request(i) for i in range(40)))
        assert done == list(range(40))
        assert wal.durable() is None  # nothing new: durable at once

    asyncio.run(scenario())
    assert 1 < count.syncs <= 3 and count.writes == count.syncs  # 40 responses, a handful of groups
    assert sorted(r.value for r in WriteAheadLog(tmp_path).next_batch(100)) == sorted(
        f"v{i}".encode() for i in range(40)
    )


def test_acknowledged_segments_are_trimmed_by_age(tmp_path: Path) -> None:
    wal = WriteAheadLog(tmp_path, segment_max_age_s=0.05)
    _fill(wal, 3)
    time.sleep(0.06)
    _fill(wal, 1)  # rotates: a second segment
    wal.commit()
    assert len(list(tmp_path.glob("*.seg"))) == 2
    for seq in range(3):
        wal.ack(seq)
    wal.save_cursor()
    assert len(list(tmp_path.glob("*.seg"))) == 1  # the acknowledged raw records are gone from disk
    assert [r.seq for r in wal.next_batch(10)] == [3]


def test_kept_until_landed_and_sent_again_to_a_new_cluster(tmp_path: Path) -> None:
    """With ``keep_until_landed`` a delivered record is not sent again to the same cluster, but it stays in
    the log until ``land`` covers its offset; a new cluster makes every unlanded record due again, in
    order; a restart of the proxy checks the unlanded tail again (deliveries live in memory)."""
    wal = WriteAheadLog(tmp_path, segment_bytes=4096, keep_until_landed=True)
    _fill(wal, 10)
    batch = wal.next_batch(100)
    for r in batch:  # partition by parity, offsets dense per partition
        wal.ack(r.seq, "topic", r.seq % 2, r.seq // 2)
    assert wal.depth == 0 and wal.unlanded == 10
    assert wal.next_batch(100) == []
    assert wal.land("topic", 0, 2) == 2  # offsets 0 and 1 of partition 0: seqs 0 and 2
    assert wal.land("topic", 0, 2) == 0  # idempotent
    assert wal.land("other", 0, 99) == 0
    assert wal.unlanded == 8 and wal.first_unacked == 1
    assert wal.positions == {"topic|0": 1}
    wal.cluster = "old"

    assert wal.forget_deliveries("new") == 8
    assert wal.depth == 8 and wal.cluster == "new" and wal.positions == {}
    wal.rewind()
    assert [r.seq for r in wal.next_batch(100)] == [1, 3, 4, 5, 6, 7, 8, 9]
    wal.ack(1, "topic", 1, 0)
    wal.land("topic", 1, 1)
    wal.ack(9, "topic", 1, 1)  # delivered, not landed
    wal.close()

    again = WriteAheadLog(tmp_path, segment_bytes=4096, keep_until_landed=True)
    assert again.cluster == "new"
    assert [r.seq for r in again.unacked()] == [3, 4, 5, 6, 7, 8, 9]  # 9 is checked against the broker


def test_records_that_need_no_landing_are_acknowledged_at_delivery(tmp_path: Path) -> None:
    wal = WriteAheadLog(tmp_path, keep_until_landed=True)
    _fill(wal, 3)
    for r in wal.next_batch(10):
        wal.ack(r.seq, "topic", 0, r.seq, landed=r.seq != 1)
    assert wal.unlanded == 1 and wal.first_unacked == 1
    wal.land("topic", 0, 2)
    assert wal.unlanded == 0 and wal.first_unacked == 3
    wal.save_cursor()
    assert list(tmp_path.glob("*.seg")) == []
