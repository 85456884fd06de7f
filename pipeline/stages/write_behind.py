"""A write-behind cache in front of a Faust table: a key written many times between two commits reaches
the table's store and changelog once.

Every write to a Faust table is a record on its changelog topic, sent one by one through Faust's and
aiokafka's per-record path, plus a store write. The join writes a trajectory's state on every event and
stores each step's body until the trajectory is emitted, then deletes it: per input event about three
table records, most of them overwritten or deleted again a moment later. Here writes and deletes wait in
a dict, newest per key, and ``flush`` applies what is left: the last value of each key, or its delete
(none at all for a key that was written and deleted in between, if the table never held it).

The guarantee stays at-least-once, as with Kafka Streams' record caches:

- ``flush`` runs before every offset commit (the stages' transport calls the app's ``before_commit``
  hooks ahead of Faust's producer flush) and before partitions are revoked. An input offset is therefore
  committed only once every table write its records made is on the changelog. A crash loses only writes
  of records whose offsets were not committed: they are read and applied again.
- Writing earlier than the commit is always allowed (the tables already ran ahead of the committed input
  offsets before this cache existed), so a cache that grows past ``max_entries`` is flushed after the
  record being processed (``full``).
- Readers see the cache first: ``get``, ``in``, iteration and deletes go through it, so nothing the
  stages read differs from writing through.

A value may also be held decoded (``put``/``get_decoded``): the stages keep the join state, placeholder
state and step body they just built as objects, so the next record of the same trajectory reads the
object instead of parsing JSON, and the object is serialised once, when it is flushed (or when a reader
asks for its bytes), instead of once per record. Held objects are never changed after they are put: the
stages' transitions build new ones.

Each entry keeps the partition and source topic of the record that wrote it: a Faust table picks the
store partition and changelog partition from the record being processed, which ``flush`` restores for
each key while it writes (commits and revokes run outside any record).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any, TypeVar

# ``_current_event`` is private: Faust has no public way to say which record a table write belongs to, and
# ``flush`` writes outside any record, as the record that made each write
from faust.streams import _current_event, current_event

_DELETED = None  # a pending delete
T = TypeVar("T")


class _Held:
    """A value held decoded: the object, and its bytes, made at most once."""

    __slots__ = ("obj", "_encode", "_data")

    def __init__(self, obj: Any, encode: Callable[[Any], bytes] | None, data: bytes | None) -> None:
        self.obj = obj
        self._encode = encode
        self._data = data

    def data(self) -> bytes:
        if self._data is None:
            assert self._encode is not None
            self._data = self._encode(self.obj)
        return self._data


def _bytes(value: bytes | _Held) -> bytes:
    return value.data() if type(value) is _Held else value  # type: ignore[union-attr,return-value]


@dataclass(frozen=True, slots=True)
class _Message:
    """What a Faust table reads of the record being processed: its partition and topic."""

    partition: int
    topic: str


@dataclass(frozen=True, slots=True, weakref_slot=True)
class _Origin:
    """Stands in for the record that wrote a key while the key is flushed (Faust holds it weakly)."""

    message: _Message


class WriteBehindTable(MutableMapping[bytes, bytes]):
    """``table`` (a Faust ``Table`` of bytes) with its writes held until ``flush``."""

    def __init__(self, table: Any, max_entries: int = 20_000) -> None:
        self.table = table
        self.max_entries = max_entries
        self._pending: dict[bytes, tuple[bytes | _Held | None, _Message]] = {}

    # ------------------------------------------------------------------ reads

    def __getitem__(self, key: bytes) -> bytes:
        hit = self._pending.get(key)
        if hit is not None:
            if hit[0] is _DELETED:
                raise KeyError(key)
            return _bytes(hit[0])
        return self.table[key]

    def get(self, key: bytes, default: Any = None) -> Any:
        hit = self._pending.get(key)
        if hit is not None:
            return default if hit[0] is _DELETED else _bytes(hit[0])
        return self.table.get(key, default)

    def held(self, key: bytes) -> Any | None:
        """The object ``key`` is held as (``put``), without encoding or reading anything; else None."""
        hit = self._pending.get(key)
        if hit is not None and type(hit[0]) is _Held:
            return hit[0].obj  # type: ignore[union-attr]
        return None

    def get_decoded(self, key: bytes, decode: Callable[[bytes], T]) -> T | None:
        """The value of ``key`` as an object: the one held, or ``decode`` of its bytes; None if absent."""
        hit = self._pending.get(key)
        if hit is not None:
            value = hit[0]
            if value is _DELETED:
                return None
            return value.obj if type(value) is _Held else decode(value)  # type: ignore[union-attr,arg-type]
        data = self.table.get(key)
        return None if data is None else decode(data)

    def __contains__(self, key: object) -> bool:
        hit = self._pending.get(key)  # type: ignore[call-overload]
        if hit is not None:
            return hit[0] is not _DELETED
        return key in self.table

    def __iter__(self) -> Iterator[bytes]:
        pending = self._pending
        for key in list(self.table.keys()):
            if key not in pending:
                yield key
        for key, (value, _) in list(pending.items()):
            if value is not _DELETED:
                yield key

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def items(self) -> Iterator[tuple[bytes, bytes]]:  # type: ignore[override]
        pending = self._pending
        for key, value in list(self.table.items()):
            if key not in pending:
                yield key, value
        for key, (value, _) in list(pending.items()):
            if value is not _DELETED:
                yield key, _bytes(value)

    def values(self) -> Iterator[bytes]:  # type: ignore[override]
        for _, value in self.items():
            yield value

    # ------------------------------------------------------------------ writes

    def __setitem__(self, key: bytes, value: bytes) -> None:
        self._put(key, value)

    def put(
        self, key: bytes, obj: Any, encode: Callable[[Any], bytes] | None = None, data: bytes | None = None
    ) -> None:
        """Write ``obj`` held decoded; its bytes are ``data`` when known, else ``encode(obj)`` when needed.
        ``obj`` must not be changed afterwards."""
        if encode is None and data is None:
            raise ValueError("a held value needs its bytes or an encoder")
        self._put(key, _Held(obj, encode, data))

    def __delitem__(self, key: bytes) -> None:
        if key not in self:
            raise KeyError(key)
        self._put(key, _DELETED)

    def _put(self, key: bytes, value: bytes | _Held | None) -> None:
        event = current_event()
        if event is None:  # outside a record: Faust refuses table writes there, and so do we
            raise RuntimeError("table written outside the processing of a record")
        self._pending[key] = (value, _Message(event.message.partition, event.message.topic))

    @property
    def full(self) -> bool:
        """Whether ``max_entries`` keys are waiting: the owner flushes after the record being processed."""
        return len(self._pending) >= self.max_entries

    def flush(self) -> int:
        """Write every pending key to the table (store and changelog); returns how many were written."""
        if not self._pending:
            return 0
        pending, self._pending = self._pending, {}
        table = self.table
        written = 0
        outer = _current_event.get(None)
        try:
            for key, (value, message) in list(pending.items()):
                origin = _Origin(message)
                _current_event.set(weakref.ref(origin))
                if value is _DELETED:
                    if key in table:
                        del table[key]
                        written += 1
                else:
                    table[key] = _bytes(value)
                    written += 1
                del pending[key]
        except BaseException:
            self._pending = pending  # what was not written stays pending
            raise
        finally:
            _current_event.set(outer)
        return written
