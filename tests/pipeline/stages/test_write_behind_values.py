"""Values held decoded in the write-behind table: read back as objects, encoded once, flushed as bytes.

The table under the wrapper is a plain dict here (the wrapper's own logic is what is tested; the Faust
table under it is exercised by ``test_write_behind.py`` with a real worker and broker). Writes happen
"while a record is processed", as Faust requires, by setting the current-event context the way the
wrapper's flush does.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from faust.streams import _current_event

from pipeline.stages.write_behind import WriteBehindTable


@dataclass
class _Message:
    partition: int
    topic: str


@dataclass
class _Record:
    message: _Message


@pytest.fixture
def processing() -> Iterator[None]:
    record = _Record(_Message(3, "sluice.steps.raw"))
    token = _current_event.set(weakref.ref(record))
    yield
    _current_event.reset(token)


@dataclass(frozen=True)
class State:
    name: str
    count: int


class Encoder:
    """Encodes a ``State`` and counts how often it was asked to."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, state: State) -> bytes:
        self.calls += 1
        return f"{state.name}:{state.count}".encode()


def decode(data: bytes) -> State:
    name, count = data.decode().split(":")
    return State(name, int(count))


def test_a_held_object_is_read_back_without_encoding_and_flushed_once(processing: None) -> None:
    store: dict[bytes, bytes] = {}
    table = WriteBehindTable(store)
    encode = Encoder()
    for count in range(5):  # five records of one trajectory: five writes of its state
        table.put(b"t1", State("t1", count), encode=encode)
        held = table.get_decoded(b"t1", decode)
        assert held == State("t1", count)
        assert table.held(b"t1") is held  # the same object, not a copy made from bytes
    assert encode.calls == 0
    assert store == {}  # nothing reaches the table before the flush

    assert table.flush() == 1
    assert store == {b"t1": b"t1:4"}  # the last value, encoded once
    assert encode.calls == 1
    assert table.held(b"t1") is None  # after a flush the bytes in the table are the truth
    assert table.get_decoded(b"t1", decode) == State("t1", 4)


def test_bytes_readers_get_the_encoding_and_it_is_made_once(processing: None) -> None:
    store: dict[bytes, bytes] = {b"old": b"old:1"}
    table = WriteBehindTable(store)
    encode = Encoder()
    table.put(b"t2", State("t2", 7), encode=encode)
    assert table[b"t2"] == b"t2:7"
    assert table.get(b"t2") == b"t2:7"
    assert dict(table.items()) == {b"old": b"old:1", b"t2": b"t2:7"}
    table.flush()
    assert store[b"t2"] == b"t2:7"
    assert encode.calls == 1


def test_known_bytes_are_stored_as_given_and_deletes_win(processing: None) -> None:
    store: dict[bytes, bytes] = {b"gone": b"gone:1"}
    table = WriteBehindTable(store)
    encode = Encoder()
    table.put(b"step", State("step", 1), data=b"as-received")
    assert table.get_decoded(b"step", decode) == State("step", 1)
    assert table[b"step"] == b"as-received"

    del table[b"gone"]
    table.put(b"brief", State("brief", 1), encode=encode)
    del table[b"brief"]  # written and deleted between two flushes: never reaches the table
    assert table.get_decoded(b"gone", decode) is None
    assert table.get_decoded(b"brief", decode) is None
    assert b"brief" not in table
    assert table.flush() == 2  # the step written, "gone" deleted
    assert store == {b"step": b"as-received"}


def test_a_held_value_needs_bytes_or_an_encoder(processing: None) -> None:
    table = WriteBehindTable({})
    with pytest.raises(ValueError, match="needs its bytes or an encoder"):
        table.put(b"k", State("k", 1))


def test_full_says_when_the_owner_should_flush(processing: None) -> None:
    table = WriteBehindTable({}, max_entries=3)
    encode = Encoder()
    for i in range(2):
        table.put(f"k{i}".encode(), State("k", i), encode=encode)
    assert not table.full
    table.put(b"k2", State("k", 2), encode=encode)
    assert table.full
    table.flush()
    assert not table.full
