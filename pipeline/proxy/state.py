"""Proxy state: the shared state of one app (``app.state.sluice``), built once, started by the lifespan."""

from __future__ import annotations

import json
import logging
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from pipeline.proxy.config import BackendConfig
from pipeline.proxy.control.erasure_listener import ErasureListener
from pipeline.proxy.control.overlay_listener import OverlayListener
from pipeline.proxy.exceptions import ApiError
from pipeline.proxy.forwarding.upstream import Upstreams
from pipeline.proxy.linking.history_linker import HistoryLinker
from pipeline.proxy.linking.link_chain_cache import LinkChainCache
from pipeline.proxy.openai_responses.chains import ResponseChains
from pipeline.proxy.ops.metrics import ProxyMetrics
from pipeline.proxy.publishing.base import EventPublisher
from pipeline.proxy.publishing.discard_publisher import DiscardPublisher
from pipeline.proxy.publishing.kafka_publisher import KafkaPublisher
from pipeline.proxy.publishing.landing import LandingTracker
from pipeline.proxy.publishing.step_journal import StepJournal
from pipeline.proxy.recording.recorder import StepRecorder, Topics
from pipeline.proxy.settings import ProxySettings
from pipeline.proxy.surfaces.auth import KeyResolver
from pipeline.proxy.surfaces.context import HeaderRecorder
from pipeline.proxy.trajectories.seen import SeenTrajectories
from sluice.events import ErasureEvent
from sluice.evolution import OverlayAssignment

log = logging.getLogger(__name__)

_NO_OVERLAYS: Mapping[str, OverlayAssignment] = {}

LINK_STATE_FILE = "links.json"
STEP_JOURNAL_FILE = "steps.journal"
LINK_KEY_FILE = "links.key"  # the key of the linker's digests, mode 0600, made at first start


class ProxyState:
    def __init__(self, config: ProxySettings) -> None:
        self.config = config
        proxy = config.proxy
        self.spool_dir: Path = config.path(proxy.spool_dir)
        self.keys = KeyResolver(proxy)
        self.header_recorder = HeaderRecorder(proxy)
        link_key = self._link_key()
        linker = HistoryLinker(
            proxy.link_window_s,
            proxy.link_max_trajectories,
            proxy.link_max_tokens,
            proxy.link_token_budget,
            hash_key=link_key,
        )
        self.erasure_offsets: dict[int, int] = {}
        self.erasure_listener: ErasureListener | None = None
        self.overlay_listener: OverlayListener | None = None
        self.upstreams = Upstreams(proxy.backends)
        self.metrics = ProxyMetrics()
        self.topics = Topics(
            steps=config.topics.name("steps_raw"),
            rewards=config.topics.name("rewards_raw"),
            deadletter=config.topics.name("deadletter"),
        )
        self.publishing = config.proxy.publish
        self.journal = StepJournal(self.spool_dir / STEP_JOURNAL_FILE)
        self.publisher: EventPublisher = self._build_publisher()
        self.metrics.bind_publisher(self.publisher.stats)
        self.seen = SeenTrajectories(proxy.seen_max_trajectories)
        self.recorder = StepRecorder(
            linker,
            self.publisher,
            self.topics,
            self.metrics,
            self.journal,
            publishing=self.publishing,
            on_journal_full=self._save_links,
            seen=self.seen,
            chains=LinkChainCache(proxy.link_chain_bytes, hash_key=link_key),
        )
        self.response_chains = ResponseChains(proxy.response_chains, digest=self.recorder.digest)  # in memory
        self._backend_cache: dict[str, BackendConfig | None] = {}
        self.started = False

    def _link_key(self) -> bytes:
        path = self.spool_dir / LINK_KEY_FILE
        try:
            return bytes.fromhex(path.read_text().strip())
        except (OSError, ValueError):
            pass
        key = secrets.token_bytes(32)
        try:
            self.spool_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(key.hex())
        except OSError as err:  # digests still work for this run; links.json will not restore
            log.warning("could not save the link key %s: %s", path, err)
        return key

    def _build_publisher(self) -> EventPublisher:
        proxy = self.config.proxy
        if not proxy.publish:
            return DiscardPublisher()
        return KafkaPublisher(
            self.config.broker,
            self.spool_dir,
            proxy,
            on_delivered=self.metrics.publish_lag.observe,
            landing=self._landing_tracker(),
        )

    def _landing_tracker(self) -> LandingTracker | None:
        """Keep events until the stages landed them where the broker keeps topics in memory."""
        keep = self.config.proxy.wal_keep_until
        if keep == "delivered" or (keep == "auto" and not self.config.broker.embedded):
            return None
        topics = self.config.topics
        return LandingTracker(
            self.config.broker,
            self.config.stages_group,
            [topics.name("steps_raw"), topics.name("rewards_raw")],
        )

    def backend_for(self, model: object) -> BackendConfig:
        """The backend serving ``model``, or 404 ``model_not_found``."""
        if not isinstance(model, str) or not model:
            raise ApiError(400, "model: a model name is required", param="model")
        if model not in self._backend_cache:
            if len(self._backend_cache) > 10_000:
                self._backend_cache.clear()
            self._backend_cache[model] = self.config.proxy.backend_for(model)
        backend = self._backend_cache[model]
        if backend is None:
            raise ApiError(
                404,
                f"The model `{model}` does not exist or is not served by any configured backend",
                param="model",
                code="model_not_found",
            )
        return backend

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        self._restore_links()
        self._replay_journal()
        await self.upstreams.start()
        await self.publisher.start()
        if self.publishing:
            self.erasure_listener = ErasureListener(
                self.config.broker,
                self.config.topics.name("erasure"),
                self.erasure_offsets,
                self.apply_erasure,
            )
            self.erasure_listener.start()
            if self.config.proxy.overlays:
                self.overlay_listener = OverlayListener(
                    self.config.broker, self.config.topics.name("overlays")
                )
                self.overlay_listener.start()
        self.started = True

    @property
    def overlays(self) -> Mapping[str, OverlayAssignment]:
        """The latest overlay assignment per scope (empty when overlays are off or none was read yet)."""
        listener = self.overlay_listener
        return listener.assignments if listener is not None else _NO_OVERLAYS

    def apply_erasure(self, event: ErasureEvent, partition: int, next_offset: int) -> None:
        """Purge the linking state and the response chains an erasure covers; write ``links.json`` without
        it right away."""
        chains = self.response_chains.forget(event)
        dropped = self.recorder.forget(event)
        self.seen.forget(event, self.recorder.is_erased)
        self.erasure_offsets[partition] = next_offset
        self._save_links()
        log.info(
            "erasure %s: %d linked trajectories forgotten, %d kept responses dropped",
            event.erasure_id,
            dropped,
            chains,
        )

    async def stop(self) -> None:
        if self.erasure_listener is not None:
            self.erasure_listener.stop()
        if self.overlay_listener is not None:
            self.overlay_listener.stop()
        await self.upstreams.close()
        await self.publisher.close()
        self._save_links()
        self.journal.close()
        self.started = False

    def _replay_journal(self) -> None:
        """Step indexes recorded after the last link snapshot (a crash): continue numbering from them."""
        behind = self.recorder.continue_from_journal()
        if behind is None:
            return
        if behind:
            log.info("step journal: %d trajectories continue their step numbering after a crash", behind)
        self._save_links()

    def _restore_links(self) -> None:
        path = self.spool_dir / LINK_STATE_FILE
        if not path.exists():
            return
        try:
            data = json.loads(path.read_text())
            self.recorder.restore(data)
            self.seen.restore(data.get("seen", []))
            self.erasure_offsets = {int(p): int(o) for p, o in data.get("erasure_offsets", {}).items()}
            log.info("restored %d trajectories for history linking from %s", self.recorder.linked(), path)
        except (ValueError, KeyError, TypeError) as err:
            log.warning("ignoring unreadable link state %s: %s", path, err)

    def _save_links(self) -> None:
        try:
            self.spool_dir.mkdir(parents=True, exist_ok=True)
            tmp = self.spool_dir / (LINK_STATE_FILE + ".tmp")
            data = self.recorder.snapshot()
            data["erasure_offsets"] = {str(p): o for p, o in self.erasure_offsets.items()}
            data["seen"] = self.seen.snapshot()
            tmp.write_text(json.dumps(data))
            tmp.replace(self.spool_dir / LINK_STATE_FILE)
            self.journal.reset()  # the snapshot holds everything it recorded
        except OSError as err:
            log.warning("could not save link state: %s", err)
