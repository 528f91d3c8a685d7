"""The store interface: one small protocol, several backends (filesystem, Redis).

Every call is scoped: `scope` is a key from `handles.scope_key`, derived from the session identity by the MCP
wiring. A backend keeps scopes strictly apart: an output put under one scope cannot be opened, listed or
deleted under another, and asking for it gives the same `UnknownHandle` as a handle that never existed.
Within its own scope, an output removed by the lifecycle (expired, evicted; see lifecycle.py) gives
`ExpiredHandle` instead, for a while.

`AdminStore` adds the one store-wide operation the operator's shell commands need (`mcp-offload outputs`):
`scan()`, every live output of every scope. It is never reachable from a tool call, so scopes stay apart for
the model; the operator, who owns the store, sees them all.
"""

from __future__ import annotations

import mmap
import re
from collections.abc import Iterable, Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from mcp_offload.store.content_index import Buffer, ContentIndex
from mcp_offload.store.lifecycle import SweepReport

Kind = Literal["json", "jsonl", "text", "blob"]


@dataclass(frozen=True, slots=True)
class OutputMeta:
    """What the store knows about an output besides its bytes and index."""

    handle: str
    kind: Kind
    size: int  # bytes as stored
    chars: int
    lines: int
    tokens: int
    tokens_estimated: bool
    created: float  # unix seconds
    name: str | None = None
    mime_type: str | None = None
    source: str | None = None  # e.g. "offload" or "proxy:<server>/<tool>"
    notes: tuple[str, ...] = field(default_factory=tuple)  # e.g. "contains unpaired surrogates"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["notes"] = list(self.notes)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OutputMeta:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known["notes"] = tuple(known.get("notes") or ())
        return cls(**known)


class LazyBytes(Protocol):
    """A read-only byte sequence whose bytes are fetched on demand (Redis backend), used like `bytes`.

    `len()`, `data[a:b]` (-> bytes, step 1), `data[i]` (-> int), `find`/`rfind`/`count` with optional
    start/end. Every call may do I/O (a blocking round trip): call it from a worker thread, not the event loop.
    """

    def __len__(self) -> int: ...
    def __getitem__(self, key: slice | int) -> Any: ...
    def find(self, sub: bytes, start: int | None = None, end: int | None = None) -> int: ...
    def rfind(self, sub: bytes, start: int | None = None, end: int | None = None) -> int: ...
    def count(self, sub: bytes, start: int | None = None, end: int | None = None) -> int: ...
    def iter_chunks(self, start: int = 0, end: int | None = None, size: int = ...) -> Iterator[bytes]: ...
    def tobytes(self) -> bytes: ...


CHUNK = 1024 * 1024


@dataclass(slots=True)
class StoredOutput:
    """An open output: its metadata, its index and a read-only view of its bytes.

    `data` is `bytes`, an `mmap` (filesystem) or a `LazyBytes` (large Redis outputs): all three support
    `len`, slicing and `find`/`rfind`/`count`, so `ContentIndex` lookups and `read_bytes` work on any of them
    (with a lazy view each lookup fetches ~16 KiB: run it in a worker thread). Whole-output scans (regex
    search, jq) should call `contiguous()` (the whole output as one buffer: free for bytes/mmap, one bulk
    fetch for lazy data) or stream `iter_chunks()`. `path` is set when the bytes are also a plain file that
    a worker process may read directly (filesystem backend); otherwise workers get the bytes.
    """

    meta: OutputMeta
    index: ContentIndex
    data: Buffer | LazyBytes
    path: Path | None = None

    def read_bytes(self, start: int, end: int) -> bytes:
        return bytes(self.data[start:end])

    def contiguous(self) -> Buffer:
        """The whole output as one in-memory buffer (materialises a lazy view; blocking for Redis)."""
        if isinstance(self.data, bytes | bytearray | memoryview | mmap.mmap):
            return self.data
        return self.data.tobytes()

    def iter_chunks(self, start: int = 0, end: int | None = None, size: int = CHUNK) -> Iterator[bytes]:
        """The bytes of [start, end) in pieces of at most `size` bytes, without holding them all at once."""
        stop = len(self.data) if end is None else min(end, len(self.data))
        for pos in range(max(start, 0), stop, size):
            yield bytes(self.data[pos : min(pos + size, stop)])


class OutputSidecar(Protocol):
    """A file kept with one stored output: data derived from it (a search index) that is dearer to rebuild than to
    read back. It lives in the output's scope, is named by the code (never by a caller's string), is removed with
    the output, and is only a cache: a reader validates what it reads and rebuilds on any doubt.

    Blocking (file I/O): call it from a worker thread."""

    def read(self, max_bytes: int) -> bytes | None:
        """The sidecar's bytes; None when there is none (or it is over `max_bytes`, or unreadable)."""
        ...

    def write(self, chunks: Iterable[bytes]) -> bool:
        """Replace the sidecar atomically with the concatenated chunks; False when the output is gone.

        Raises `SidecarOverQuota` (an `OSError`) when keeping it would take the output's scope or the store over
        its byte quota: the old sidecar, if any, stays, and no output is evicted for it."""
        ...

    def output_exists(self) -> bool:
        """Whether the output is still stored (a build for a deleted or expired one can stop)."""
        ...


class SidecarOverQuota(OSError):
    """A sidecar not kept: it would take its scope or the store over a byte quota (a cache never evicts data)."""


SIDECAR_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")


class StagedContent(Protocol):
    """An output's bytes being written ahead of its metadata (`Store.stage`). `put(..., staged=...)` publishes them
    and takes them over; `discard()` drops them (from any thread, at any point of the write; idempotent)."""

    def discard(self) -> None: ...


class Store(Protocol):
    """A session-scoped output store."""

    def stage(self, data: bytes) -> StagedContent | None:
        """Start writing `data` now, in the background, ahead of its `put` (callable from any thread): the caller
        builds the preview meanwhile, and `put` then only adds the metadata and publishes. None when this backend
        does not stage (it writes everything in `put`) or the bytes could never fit; nothing is visible either way
        until `put`."""
        ...

    async def put(
        self, scope: str, meta: OutputMeta, index: ContentIndex, data: bytes, staged: StagedContent | None = None
    ) -> None:
        """Store atomically: afterwards the whole output is visible, or (on any error) nothing is. `staged`: `data`
        as `stage` began writing it, which `put` takes over (published, or discarded on any error)."""
        ...

    def open(self, scope: str, handle: str) -> AbstractAsyncContextManager[StoredOutput]:
        """Open an output for reading; raises `UnknownHandle`/`ExpiredHandle`. Refreshes its recency."""
        ...

    async def meta(self, scope: str, handle: str) -> OutputMeta: ...

    async def list(self, scope: str) -> list[OutputMeta]:
        """This scope's outputs, newest first."""
        ...

    async def delete(self, scope: str, handle: str) -> None: ...

    def sidecar(self, scope: str, handle: str, name: str) -> OutputSidecar | None:
        """The sidecar `name` (`SIDECAR_NAME`) of an output, or None when this backend keeps none."""
        ...

    async def sweep(self) -> SweepReport:
        """Remove expired outputs, debris of crashed writers and old tombstones; run it periodically."""
        ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class ScannedOutput:
    """One live output as a store-wide scan sees it: its scope, metadata and lifecycle times (unix seconds)."""

    scope: str
    meta: OutputMeta
    last_used: float | None  # the last open; None if never opened since it was stored
    expires: float  # when the lifecycle removes it (in the past: expired, not yet swept)
    sidecar_bytes: int = 0  # its sidecars (a search index kept with it): they count in the quotas with it

    @property
    def used_bytes(self) -> int:
        """What it takes from the store's byte quotas, and what removing it frees: content and sidecars."""
        return self.meta.size + self.sidecar_bytes


class AdminStore(Store, Protocol):
    """A store the operator can look across: every backend is one (the `outputs` commands use it)."""

    async def scan(self, *, expired: bool = False) -> list[ScannedOutput]:
        """Every live output of every scope, newest first (with `expired`, also expired ones not yet swept).

        Read-only and tolerant: outputs published or removed while it runs are simply in or out of the result.
        """
        ...
