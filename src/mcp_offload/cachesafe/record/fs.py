"""The decision record on the filesystem store: one append-only JSON-lines log per session,
`<store root>/gateway/v1/<session key>.jsonl` (0600 in a 0700 directory, opened with O_NOFOLLOW: the discipline of
`store/record_files.py`; an `OSError` is `StoreUnavailable`, `store/failures.py`).

A line is `{"f": field, "v": value}`, `{"f": field, "v": value, "o": order}` (`put_latest`) or
`{"c": {counter: n}}`. Set-if-absent takes an exclusive flock on the log, reads what it has not read yet, appends
only the fields still absent (one `write` on an O_APPEND descriptor) and releases the lock; readers need no lock and
parse complete lines only, and the first value of a field wins (a line with an order replaces it when its order is
higher than the one the field holds; no order counts as the lowest), so even a torn or duplicated write never makes
two readers disagree. Each process caches what it has parsed (by inode and
offset), so a turn reads only the lines added since its last one. Logs unused for `RECORD_TTL_S` are removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio

from mcp_offload.cachesafe.record.base import RECORD_TTL_S
from mcp_offload.store.failures import filesystem_errors
from mcp_offload.store.handles import validate_scope
from mcp_offload.store.record_files import (
    FILE_MODE,
    READ_APPEND_FLAGS,
    READ_FLAGS,
    json_line,
    make_private_directory,
    write_all,
)

T = TypeVar("T")
DIRECTORY = ("gateway", "v1")
SUFFIX = ".jsonl"
CACHED_SESSIONS = 256
SWEEP_INTERVAL_S = 600.0
_read_errors = functools.partial(filesystem_errors, "the gateway record could not be read ({reason})")
_write_errors = functools.partial(filesystem_errors, "the gateway record could not be written ({reason})")
_io_errors = functools.partial(filesystem_errors, "the gateway record could not be read or written ({reason})")


@dataclass(slots=True)
class _Parsed:
    inode: int = -1
    offset: int = 0
    fields: dict[str, str] = field(default_factory=dict)
    orders: dict[str, int] = field(default_factory=dict)  # the order of the value a `put_latest` field holds
    counters: dict[str, int] = field(default_factory=dict)


class FilesystemRecord:
    def __init__(self, root: str | Path, *, ttl_s: float = RECORD_TTL_S, clock: Callable[[], float] = time.time):
        self.directory = Path(root).expanduser().absolute().joinpath(*DIRECTORY)
        self.ttl_s = ttl_s
        self.clock = clock
        self._parsed: OrderedDict[str, _Parsed] = OrderedDict()
        self._parsing = threading.Lock()  # the event loop (reads) and worker threads (writes) share the cache
        self._made = False
        self._last_sweep = clock()

    # -- files ------------------------------------------------------------------------------------------
    def _path(self, session: str) -> Path:
        return self.directory / (validate_scope(session) + SUFFIX)

    def _ensure_directory(self) -> None:
        if not self._made:
            plain = "the gateway record directory is not a plain directory; check --store"
            make_private_directory(self.directory, plain=plain)
            self._made = True

    def _state(self, session: str) -> _Parsed:
        state = self._parsed.get(session)
        if state is None:
            state = self._parsed[session] = _Parsed()
            while len(self._parsed) > CACHED_SESSIONS:
                self._parsed.popitem(last=False)
        self._parsed.move_to_end(session)
        return state

    def _catch_up(self, session: str, fd: int) -> _Parsed:
        """Parse the complete lines added to the log (open as `fd`) since this process last read it."""
        with self._parsing:
            return self._catch_up_locked(session, fd)

    def _catch_up_locked(self, session: str, fd: int) -> _Parsed:
        state = self._state(session)
        info = os.fstat(fd)
        if info.st_ino != state.inode or info.st_size < state.offset:
            state = self._parsed[session] = _Parsed(inode=info.st_ino)
        if info.st_size == state.offset:
            return state
        raw = os.pread(fd, info.st_size - state.offset, state.offset)
        end = raw.rfind(b"\n") + 1
        for line in raw[:end].splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a line torn by a full disk: skipped by every reader alike
            if not isinstance(entry, dict):
                continue
            name, value, counts, order = entry.get("f"), entry.get("v"), entry.get("c"), entry.get("o")
            if isinstance(name, str) and isinstance(value, str) and isinstance(order, int):
                if name not in state.fields or order > state.orders.get(name, -1):  # the latest order wins
                    state.fields[name], state.orders[name] = value, order
            elif isinstance(name, str) and isinstance(value, str):
                state.fields.setdefault(name, value)  # the first value wins
            elif isinstance(counts, dict):
                for key, count in counts.items():
                    if isinstance(count, int) and not isinstance(count, bool):
                        state.counters[key] = state.counters.get(key, 0) + count
        state.offset += end
        return state

    def _read(self, session: str) -> _Parsed:
        try:
            fd = os.open(self._path(session), READ_FLAGS)
        except FileNotFoundError:
            return _Parsed()
        try:
            return self._catch_up(session, fd)
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def _locked_log(self, session: str) -> Iterator[int]:
        self._ensure_directory()
        fd = os.open(self._path(session), READ_APPEND_FLAGS, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield fd
        finally:
            os.close(fd)

    @staticmethod
    def _append(fd: int, lines: list[bytes]) -> None:
        write_all(fd, b"".join(lines))

    # -- the backend interface ---------------------------------------------------------------------------------
    async def get(self, session: str, fields: Sequence[str]) -> dict[str, str]:
        # lock-free and small (the lines added since this process last read): read inline, a thread hop costs more
        with _read_errors():
            state = self._read(session)
        return {f: state.fields[f] for f in fields if f in state.fields}

    def _put_sync(self, session: str, items: Mapping[str, str]) -> dict[str, str]:
        with self._locked_log(session) as fd:
            state = self._catch_up(session, fd)
            lines = [json_line({"f": k, "v": v}) for k, v in items.items() if k not in state.fields]
            if lines:
                self._append(fd, lines)
            else:
                os.utime(fd)  # a use: keeps the log from expiring
            state = self._catch_up(session, fd)
        return {k: state.fields[k] for k in items if k in state.fields}

    async def put_if_absent(self, session: str, items: Mapping[str, str]) -> dict[str, str]:
        if not items:
            return {}
        held = await self._run(self._put_sync, session, items)
        if self.clock() - self._last_sweep >= SWEEP_INTERVAL_S:
            self._last_sweep = self.clock()
            await self._run(self._sessions_sync)  # removes the logs of sessions unused for ttl_s
        return held

    def _put_latest_sync(self, session: str, items: Mapping[str, tuple[int, str]]) -> None:
        with self._locked_log(session) as fd:
            state = self._catch_up(session, fd)
            lines = [
                json_line({"f": k, "v": v, "o": o})
                for k, (o, v) in items.items()
                if k not in state.fields or o > state.orders.get(k, -1)
            ]
            if lines:
                self._append(fd, lines)

    async def put_latest(self, session: str, items: Mapping[str, tuple[int, str]]) -> None:
        if items:
            await self._run(self._put_latest_sync, session, items)

    def _add_sync(self, session: str, counts: Mapping[str, int]) -> None:
        line = json_line({"c": dict(counts)})
        with self._locked_log(session) as fd:
            self._append(fd, [line])

    def _add_now(self, session: str, line: bytes) -> bool:
        """Append `line` if the log's lock is free right now (one small write: cheaper inline than a thread hop,
        which costs milliseconds on a busy machine); False when another writer holds it."""
        self._ensure_directory()
        fd = os.open(self._path(session), READ_APPEND_FLAGS, FILE_MODE)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            self._append(fd, [line])
            return True
        finally:
            os.close(fd)

    async def add(self, session: str, counts: Mapping[str, int]) -> None:
        kept = {k: v for k, v in counts.items() if v}
        if not kept:
            return
        line = json_line({"c": kept})
        with _write_errors():
            if self._add_now(session, line):
                return
        await self._run(self._add_sync, session, kept)  # the lock is busy: wait for it in a worker thread

    async def counters(self, session: str) -> dict[str, int]:
        state = await self._run(self._read, session)
        with self._parsing:
            return dict(state.counters)

    def _sessions_sync(self) -> list[tuple[str, float]]:
        if not self.directory.is_dir():
            return []
        now = self.clock()
        found: list[tuple[str, float]] = []
        for entry in os.scandir(self.directory):
            name = entry.name
            if not name.endswith(SUFFIX) or not entry.is_file(follow_symlinks=False):
                continue
            mtime = entry.stat(follow_symlinks=False).st_mtime
            if now - mtime > self.ttl_s:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
                with self._parsing:
                    self._parsed.pop(name[: -len(SUFFIX)], None)
                continue
            found.append((name[: -len(SUFFIX)], mtime))
        return sorted(found, key=lambda item: -item[1])

    async def sessions(self) -> list[tuple[str, float]]:
        return await self._run(self._sessions_sync)

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        with _io_errors():
            return await anyio.to_thread.run_sync(fn, *args)

    async def aclose(self) -> None:
        self._parsed.clear()
