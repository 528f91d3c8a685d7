"""Passage indexes: built once per output, in the background when it is stored, kept in memory and with the output.

Keyed like the JSON structure index by (handle, creation time, size): outputs never change once stored, and a
handle carries 130 random bits, so a key names one output of one scope. The cache is only reached after the store
has opened the output for the caller's scope (`rank.py` gets `StoredOutput`s, never handles), or by the ingest step
that just stored it, so one session can never query another's index.

Where an index comes from, first found first:
1. this process's memory: an LRU bounded by the bytes the indexes hold;
2. a build in progress (in the background since the output was stored, or another question's): a question waits
   for it instead of starting its own, so there is one build per output;
3. the output's sidecar (`store.OutputSidecar`, filesystem store), checked before use (`index_file.py`): a restart
   does not rebuild; a sidecar that fails a check is logged and rebuilt over;
4. a build from the output's bytes, which is then written to the sidecar (outputs of `PERSIST_MIN` bytes or more)
   when the store's byte quotas have room for it (it counts in them with its output); otherwise it stays in memory.

Background builds (`warm`): an output of `WARM_MIN` bytes or more starts building when it is stored, so the model's
first ranked question (seconds later) finds it ready. With a `remote` builder (the ingest worker processes:
`IngestPool.passage_index`), the build runs there and this process only loads the file it answers: built here, the
tokenizing would hold this process's GIL, and stall a shared server's other clients, for most of a second per 4 MB.
One background builder, on one thread, at most `WARM_QUEUE` outputs waiting and `WARM_QUEUE_BYTES` of their bytes
held (each job holds its output's bytes); more are left to the first question. While an offload is in progress a
background build pauses between batches (up to `YIELD_S` each), so it does not slow the offload down on the same
cores. A build whose output is gone (deleted, expired) before or while it runs stops and keeps nothing. A failed
build is logged (structured, to stderr) and the first question builds it again and reports what goes wrong.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Callable, Iterator
from typing import TypeAlias

from mcp_offload.retrieve.build_once_cache import BuildOnceCache, OutputKey
from mcp_offload.retrieve.ranked.fts_index import BuildCancelled, PassageIndex, build_index
from mcp_offload.retrieve.ranked.index_file import IndexFileInvalid, dump_index, load_index, max_file_bytes
from mcp_offload.store.base import OutputSidecar, SidecarOverQuota
from mcp_offload.store.content_index import Buffer

log = logging.getLogger(__name__)

RemoteBuild: TypeAlias = Callable[[Buffer, OutputKey], "bytes | None"]  # an index file built elsewhere, or None

DEFAULT_BUDGET = 512 << 20
SIDECAR = "passages"  # the sidecar's name in the store
WARM_MIN = 1 << 20  # smaller outputs build in ~20 ms at their first question
PERSIST_MIN = 1 << 20  # smaller indexes are rebuilt after a restart rather than kept on disk
WARM_QUEUE = 16  # outputs waiting; their bytes are bounded by WARM_QUEUE_BYTES
YIELD_S = 0.5  # longest a background build pauses between two batches for offloads in progress
WARM_QUEUE_BYTES = 256 << 20  # bytes of outputs held for background builds (one larger output still goes alone)


class IndexCache(BuildOnceCache[PassageIndex]):
    """Bounded by the bytes the indexes hold; counts builds and sidecar loads (for tests and the benchmark)."""

    def __init__(self, budget_bytes: int = DEFAULT_BUDGET) -> None:
        super().__init__(budget_bytes, weigh=lambda index: index.nbytes)
        self.builds = 0
        self.loads = 0
        self.warming = 0  # background builds queued or running
        self.warming_bytes = 0  # the bytes of their outputs, held until each build ends
        self.offloads = 0  # offloads in progress (`offloading`): background builds give way to them
        self.asking = 0  # questions getting an index: background builds do not give way then (one may wait on it)
        self._idle = threading.Condition(self.lock)
        self._jobs: queue.SimpleQueue[tuple[OutputKey, Buffer, OutputSidecar | None, RemoteBuild | None]] = (
            queue.SimpleQueue()
        )
        self._worker: threading.Thread | None = None

    def get(self, key: OutputKey, load: Callable[[], Buffer], sidecar: OutputSidecar | None = None) -> PassageIndex:
        """The index of the output `key` names: cached, being built (waited for), from its sidecar, or built from
        `load()` (its bytes). While a question asks, background builds do not pause for offloads."""
        with self._idle:
            self.asking += 1
            self._idle.notify_all()
        try:
            return self.get_or_build(key, lambda: self._load_or_build(key, load, sidecar, background=False))
        finally:
            with self._idle:
                self.asking -= 1

    def warm(
        self, key: OutputKey, data: Buffer, sidecar: OutputSidecar | None = None, remote: RemoteBuild | None = None
    ) -> bool:
        """Start building the index of a just-stored output in the background (False: skipped, too small, cached,
        being built or the queue is full); by `remote` when it is given and can (else here)."""
        if key[2] < WARM_MIN:
            return False
        with self.lock:
            if key in self.items or key in self.building or self.warming >= WARM_QUEUE:
                return False
            if self.warming and self.warming_bytes + key[2] > WARM_QUEUE_BYTES:
                return False
            self.warming += 1
            self.warming_bytes += key[2]
            if self._worker is None:
                # a daemon: the process exits without finishing queued builds (a cache; the sidecar is written by
                # rename, so an interrupted write leaves no sidecar, only a temp file removed with the output)
                self._worker = threading.Thread(target=self._work, name="passage-index", daemon=True)
                self._worker.start()
        self._jobs.put((key, data, sidecar, remote))
        return True

    def _work(self) -> None:
        while True:
            self._warm(*self._jobs.get())

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no background build is queued or running (tests, the benchmark, shutdown)."""
        with self._idle:
            return self._idle.wait_for(lambda: self.warming == 0, timeout)

    def _warm(
        self, key: OutputKey, data: Buffer, sidecar: OutputSidecar | None, remote: RemoteBuild | None = None
    ) -> None:
        try:
            if sidecar is not None and not sidecar.output_exists():
                return  # deleted or expired while it waited
            self.get_or_build(
                key, lambda: self._load_or_build(key, lambda: data, sidecar, background=True, remote=remote)
            )
        except BuildCancelled:
            log.info("passage index build stopped: the output is gone", extra={"fields": {"handle": key[0]}})
        except Exception as exc:  # e.g. MemoryError: the first question builds it and reports what goes wrong
            log.warning(
                "building the passage index in the background failed; the first ranked question builds it",
                extra={"fields": {"handle": key[0], "error": f"{type(exc).__name__}: {exc}"}},
            )
        finally:
            self._warmed(key)

    def _warmed(self, key: OutputKey) -> None:
        with self._idle:
            self.warming -= 1
            self.warming_bytes -= key[2]
            self._idle.notify_all()

    def _load_or_build(
        self,
        key: OutputKey,
        load: Callable[[], Buffer],
        sidecar: OutputSidecar | None,
        *,
        background: bool,
        remote: RemoteBuild | None = None,
    ) -> PassageIndex:
        if sidecar is not None and key[2] >= PERSIST_MIN:
            found = self._from_sidecar(key, sidecar)
            if found is not None:
                return found
        if remote is not None:
            built = self._built_elsewhere(key, load(), sidecar, remote)
            if built is not None:
                return built
        # one thread in the background (the other core stays with the server's calls); a waiting question: all
        checkpoint = (lambda: self._between_batches(sidecar)) if background else None
        index = build_index(load(), builders=1 if background else None, checkpoint=checkpoint)
        with self.lock:
            self.builds += 1
        if sidecar is not None and key[2] >= PERSIST_MIN and not self._persist(key, index, sidecar) and background:
            index.close()
            raise BuildCancelled  # the output went away while it was being built: keep nothing
        return index

    def _built_elsewhere(
        self, key: OutputKey, data: Buffer, sidecar: OutputSidecar | None, remote: RemoteBuild
    ) -> PassageIndex | None:
        """The index `remote` built (None: build it here), kept with its output as a local build is."""
        payload = remote(data, key)
        if payload is None:
            return None
        try:
            index = load_index(payload, key)
        except IndexFileInvalid as exc:  # not expected (the same code wrote it): build it here
            log.warning("a passage index built elsewhere failed its checks", extra={"fields": {"error": str(exc)}})
            return None
        with self.lock:
            self.builds += 1
        if sidecar is not None and key[2] >= PERSIST_MIN and not self._persist(key, index, sidecar, payload):
            index.close()
            raise BuildCancelled  # the output went away while it was being built: keep nothing
        return index

    @contextlib.contextmanager
    def offloading(self) -> Iterator[None]:
        """Mark an offload in progress: background builds pause between batches meanwhile (up to `YIELD_S` each), so
        a build started by one offload does not slow the next one down on the same cores."""
        with self._idle:
            self.offloads += 1
        try:
            yield
        finally:
            with self._idle:
                self.offloads -= 1
                self._idle.notify_all()

    def _between_batches(self, sidecar: OutputSidecar | None) -> None:
        """A background build's checkpoint: stop if its output is gone, give way to offloads in progress."""
        if sidecar is not None and not sidecar.output_exists():
            raise BuildCancelled
        with self._idle:
            self._idle.wait_for(lambda: self.offloads == 0 or self.asking > 0, YIELD_S)

    def _from_sidecar(self, key: OutputKey, sidecar: OutputSidecar) -> PassageIndex | None:
        payload = sidecar.read(max_file_bytes(key[2]))
        if payload is None:
            return None
        try:
            index = load_index(payload, key)
        except IndexFileInvalid as exc:
            log.warning(
                "a stored passage index failed its checks; rebuilding it",
                extra={"fields": {"handle": key[0], "error": str(exc)}},
            )
            return None
        with self.lock:
            self.loads += 1
        return index

    def _persist(
        self, key: OutputKey, index: PassageIndex, sidecar: OutputSidecar, payload: bytes | None = None
    ) -> bool:
        """Keep the index with its output (False: the output is gone); `payload`: its file, when already made. A
        failure to write costs only a rebuild after a restart; so does an index the store's quotas have no room for:
        outputs are never evicted for it."""
        try:
            return sidecar.write([payload] if payload is not None else dump_index(index, key))
        except SidecarOverQuota as exc:
            log.info(
                "the passage index is kept in memory only: the store's size limits leave no room for it",
                extra={"fields": {"handle": key[0], "error": str(exc)}},
            )
            return True
        except OSError as exc:
            log.warning(
                "could not keep the passage index with its output; a restart rebuilds it",
                extra={"fields": {"handle": key[0], "error": str(exc)}},
            )
            return True


INDEXES = IndexCache()


def warm_index(key: OutputKey, data: Buffer, sidecar: OutputSidecar | None, remote: RemoteBuild | None = None) -> bool:
    """Start building the passage index of a just-stored text output (`data`: its bytes in memory) when it is large
    enough for the first ranked question to notice, by `remote` when given; True when started."""
    return INDEXES.warm(key, data, sidecar, remote)


def offload_in_progress() -> contextlib.AbstractContextManager[None]:
    """Mark an offload in progress for its duration: background index builds pause between batches meanwhile."""
    return INDEXES.offloading()
