"""The private parts of Faust and aiokafka the stages rely on are still there, with the shape they expect.

``pipeline/stages/transport.py`` (and ``app.py``, ``write_behind.py``, ``table_carry.py``) set, read or
override private attributes and methods of faust-streaming and aiokafka, because no setting does the same
(each one's reason is in the transport's module docstring). An upgrade that renames one, moves it or
changes its signature would otherwise fail silently (a fetch wait back at 1.5 s, a connection that waits
20 minutes, records committed unprocessed) or only in the slow broker tests. Each check here names the
patch it protects. No broker: the clients are built, never started.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import faust
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.client import AIOKafkaClient
from faust.stores import rocksdb as faust_rocksdb
from faust.transport import consumer as faust_consumer
from faust.transport.drivers import aiokafka as stock
from faust.types import Message

from pipeline.stages import transport
from pipeline.stages.table_carry import OFFSET_KEY


def params(fn: Callable[..., Any]) -> list[str]:
    return list(inspect.signature(fn).parameters)


def source(obj: Any) -> str:
    return inspect.getsource(obj)


def kind(fn: Callable[..., Any]) -> str:
    if inspect.isasyncgenfunction(fn):
        return "an async generator"
    return "a coroutine" if inspect.iscoroutinefunction(fn) else "plain"


def overrides(cls: type) -> Iterator[tuple[str, type]]:
    """Each method ``cls`` defines that its nearest Faust base class also defines."""
    base = cls.__mro__[1]
    for name, member in vars(cls).items():
        if callable(member) and not name.startswith("__") and hasattr(base, name):
            yield name, base


OVERRIDES = [
    (transport.ShortFetchConsumerThread, {"seek_to_committed", "_create_worker_consumer"}),
    (transport.ReconnectingProducer, {"_new_producer"}),
    (
        transport.ShortFetchConsumer,
        {"_new_consumer_thread", "highwaters", "ack", "_add_gap", "_new_offset", "_commit_offsets"}
        | {"force_commit", "getmany"},
    ),
]


@pytest.mark.parametrize(("cls", "expected"), OVERRIDES, ids=lambda v: getattr(v, "__name__", ""))
def test_overridden_methods_exist_on_the_base_with_the_same_parameters(cls: type, expected: set[str]) -> None:
    found = dict(overrides(cls))
    assert set(found) == expected, f"{cls.__name__}: the Faust base no longer has {expected - set(found)}"
    for name, base in found.items():
        ours, theirs = getattr(cls, name), getattr(base, name)
        assert params(ours) == params(theirs), f"{cls.__name__}.{name}: Faust's signature changed"
        assert kind(ours) == kind(theirs), (
            f"{cls.__name__}.{name}: Faust's is {kind(theirs)}, ours {kind(ours)}"
        )


def test_own_helpers_shadow_nothing_in_faust() -> None:
    """The transport's own methods and the names it stores on Faust objects are not Faust's names."""
    own = {"_seeks", "_is_live", "_check_tails", "_read_again", "_seek_back", "_fetch_again"}
    for name in own:
        assert not hasattr(stock.Consumer, name), f"Faust's Consumer now has {name}: the transport shadows it"
    assert not hasattr(stock.AIOKafkaConsumerThread, "_seek_to_committed_all")


def test_fetch_wait_and_request_timeout_are_where_the_patch_sets_them() -> None:
    """Patch: the thread's ``_create_worker_consumer`` writes ``consumer._fetch_max_wait_ms`` (read by
    ``start`` for its fetcher) and ``consumer._client._request_timeout_ms`` (read for each connection)."""

    async def build() -> AIOKafkaConsumer:
        consumer = AIOKafkaConsumer(
            bootstrap_servers="127.0.0.1:1", fetch_max_wait_ms=111, request_timeout_ms=222
        )
        await consumer.stop()
        return consumer

    consumer = asyncio.run(build())
    assert consumer._fetch_max_wait_ms == 111, "aiokafka no longer keeps the fetch wait in _fetch_max_wait_ms"
    assert "self._fetch_max_wait_ms" in source(AIOKafkaConsumer.start), (
        "aiokafka's start ignores _fetch_max_wait_ms"
    )
    assert consumer._client._request_timeout_ms == 222, "aiokafka's consumer client moved _request_timeout_ms"
    assert "self._request_timeout_ms" in source(AIOKafkaClient._get_conn), (
        "connections ignore _request_timeout_ms"
    )
    assert params(stock.AIOKafkaConsumerThread._create_worker_consumer) == ["self", "transport"]
    assert "fetch_max_wait_ms=" in source(stock.AIOKafkaConsumerThread._create_worker_consumer)


def test_producer_client_timeout_is_separate_from_the_batch_lifetime() -> None:
    """Patch: ``_new_producer`` writes ``producer.client._request_timeout_ms`` and leaves the producer's
    own ``_request_timeout_ms`` (its batches' lifetime) at Faust's ``producer_request_timeout``."""

    async def build() -> AIOKafkaProducer:
        producer = AIOKafkaProducer(bootstrap_servers="127.0.0.1:1", request_timeout_ms=333)
        await producer.stop()
        return producer

    producer = asyncio.run(build())
    assert producer.client._request_timeout_ms == 333, "aiokafka's producer client moved _request_timeout_ms"
    assert producer._request_timeout_ms == 333, "aiokafka's producer no longer keeps the batch lifetime there"
    assert params(stock.Producer._new_producer) == ["self", "transactional_id"]


def test_a_built_worker_has_the_patched_clients_and_the_consumer_state_the_transport_reads() -> None:
    """The transport as Faust builds it: its consumer and thread classes, the fetch wait and timeouts on
    the clients, and the consumer state that the commit and seek-back patches (points 2, 5, 6) use."""

    async def build() -> None:
        app = faust.App("sluice-contract", broker="sluice-tansu://127.0.0.1:1", web_enabled=False)
        consumer = app.consumer
        assert isinstance(consumer, transport.ShortFetchConsumer), "the sluice-tansu entry point is not used"
        for name in ("_acked", "_acked_index", "_committed_offset", "_buffered_partitions", "scheduler"):
            assert hasattr(consumer, name), f"Faust's Consumer no longer sets {name} (read by the transport)"
        assert hasattr(consumer, "_waiting_for_ack"), "Faust's Consumer no longer has _waiting_for_ack (ack)"
        assert consumer.unacked is consumer._unacked_messages, "Consumer.unacked is no longer the live set"
        assert hasattr(consumer._committed_offset, "get") and consumer._committed_offset["x"] is None
        thread = consumer._new_consumer_thread()
        assert isinstance(thread, transport.ShortFetchConsumerThread)
        client = thread._create_worker_consumer(app.transport)
        assert client._fetch_max_wait_ms == transport.ShortFetchConsumerThread.fetch_max_wait_ms
        assert client._client._request_timeout_ms == transport.REQUEST_TIMEOUT_MS
        await client.stop()
        producer = app.producer._new_producer()
        assert producer.client._request_timeout_ms == transport.REQUEST_TIMEOUT_MS
        assert producer._request_timeout_ms == int(app.conf.producer_request_timeout * 1000)
        await producer.stop()

    asyncio.run(build())


def test_the_thread_seek_uses_aiokafka_calls_that_still_exist() -> None:
    """Patch: ``seek_to_committed`` (point 3) runs on the consumer thread through ``call_thread`` and
    ``_ensure_consumer``, and seeks never-committed partitions with ``seek_to_beginning``."""
    assert params(stock.AIOKafkaConsumerThread._ensure_consumer) == ["self"]
    assert hasattr(stock.AIOKafkaConsumerThread, "call_thread")
    for name in ("seek_to_committed", "seek_to_beginning", "assignment"):
        assert hasattr(AIOKafkaConsumer, name), f"aiokafka's consumer no longer has {name}"


def test_consumer_internals_the_patches_call_keep_their_shape() -> None:
    """Patches: ``getmany`` (point 2) calls ``_wait_next_records`` and ``_to_message``; the seek back uses
    Faust's ``seek``; Faust's own drain and commit paths still call the overridden methods, in order."""
    assert params(faust_consumer.Consumer._wait_next_records) == ["self", "timeout"]
    assert params(stock.Consumer._to_message) == ["self", "tp", "record"]
    assert params(faust_consumer.Consumer.seek) == ["self", "partition", "offset"]
    assert "self._read_offset[" in source(faust_consumer.Consumer.seek), (
        "Faust's seek no longer moves the read offset"
    )
    module = source(faust_consumer)
    assert "await self._add_gap(tp, r_offset + 1, offset)" in module, (
        "Faust's drain loop no longer calls _add_gap"
    )
    assert "self._new_offset(tp)" in source(faust_consumer.Consumer._filter_committable_offsets)
    assert "self._commit_offsets(" in source(faust_consumer.Consumer._commit_tps)
    commit = source(faust_consumer.Consumer._commit_offsets)
    assert commit.index("self.app.producer.flush()") < commit.index("self._commit("), (
        "Faust's _commit_offsets no longer flushes the producer before it commits (before_commit hooks)"
    )


def test_generation_and_flow_checks_read_public_names() -> None:
    """Patch: ``ack`` counts an acknowledgement only from the live generation while records flow."""
    assert faust.App("sluice-contract-gen").consumer_generation_id == 0
    assert "generation_id" in Message.__slots__ or hasattr(Message, "generation_id")
    assert callable(faust.App("sluice-contract-flow").flow_control.is_active)


def test_the_revoke_callback_the_app_wraps_is_given_to_the_consumer() -> None:
    """Patch (``app.py``): ``app._on_partitions_revoked`` is wrapped before the consumer is created, so the
    held table writes are flushed before Faust closes the stores."""
    assert params(faust.App._on_partitions_revoked) == ["self", "revoked"]
    assert "on_partitions_revoked=self._on_partitions_revoked" in source(faust.App._new_consumer)


def test_current_event_is_a_contextvar_of_weak_references() -> None:
    """Patch (``write_behind.py``): ``flush`` sets ``faust.streams._current_event`` to a weak reference to
    the record that made each write; Faust's tables read it back through ``current_event()``."""
    from faust import streams

    class Origin:
        pass

    origin = Origin()

    def read() -> Any:
        streams._current_event.set(weakref.ref(origin))
        return streams.current_event()

    assert isinstance(streams._current_event, contextvars.ContextVar)
    assert contextvars.copy_context().run(read) is origin


def test_rocksdb_store_keeps_its_offset_key_and_partition_dbs() -> None:
    """Patches: ``table_carry.py`` reads the store's offset under ``OFFSET_KEY``; ``app.py`` compacts the
    per-partition DBs in the store's ``_dbs`` after an erasure (a rename would skip it silently)."""
    assert faust_rocksdb.Store.offset_key == OFFSET_KEY
    assert "_dbs" in faust_rocksdb.Store.__annotations__
    assert "self._dbs = " in source(faust_rocksdb.Store.__init__)
