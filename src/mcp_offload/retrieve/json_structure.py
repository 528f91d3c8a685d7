"""The structure checkpoint index of a stored JSON / JSON Lines output: where in the document a byte is.

Every `INTERVAL` bytes (at the first structural character at or after each multiple) we record the container
stack at that point: per open level, the byte of its `[`/`{`, whether it is an array, how many elements of it
came before (arrays: the current element's index) and the byte of the last `{`/`[`/`,` at that level (objects:
the current member's key follows it). Plus how many top-level values started before (JSON Lines: the record
number). A lookup starts at the nearest checkpoint at or before a byte and tokenizes forward at most about one
interval (`json_locate.py`), so locating a search hit costs O(interval + depth), never a re-parse.

Built vectorised with numpy, simdjson-style, on the stored UTF-8 bytes (pretty or minified alike):
backslash runs → escaped quotes → the string-delimiting quotes; the structural characters `[]{},` outside
strings; depth by cumulative sum; then, per level (a stable radix sort by level), the last opener and the comma
count before each checkpoint by `searchsorted`. Measured on this machine (2 cores), 110 MB in the same runs, before
and after the two byte scans (`_string_quotes`, `_structural`) were made cheaper: pretty JSON with escaped quotes
and backslashes 1.8-2.7 s → 1.2-1.4 s (0.6x `orjson.loads` of the same bytes); the core bench's minified JSON, with
no backslash and 16 M quotes, 2.0-2.4 s → 1.7-1.9 s, most of it now the in-string test of each structural byte
(`searchsorted` of 5 M positions among 16 M quotes) and the per-level bookkeeping. The index itself is tiny
(~25,600 checkpoints × depth for 100 MB; at most `MAX_LEVELS` levels in all).

When: right after an output of 1 MiB or more is stored, in one background thread (`warm_structure`), so the
offload reply does not wait for it (its budget: ≤ 2× `orjson.loads`) and the model's first search, seconds later,
finds it ready; else at the first search that wants JSON paths (a search arriving mid-build waits for that
build). Cached in a bounded in-process LRU keyed by (handle, created, size): a repeated search is free. Kept
beside the output too (its sidecar, `json_structure_file.py`, where the store keeps sidecars): a first search in
another process on the same store (another gateway or HTTP worker), or after a restart, loads it in milliseconds
instead of rebuilding it. Input is assumed to be the valid JSON / JSON Lines the offload step detected; on
anything else lookups degrade to shorter paths, never to errors.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mcp_offload.retrieve.build_once_cache import BuildOnceCache, OutputKey
from mcp_offload.store.base import OutputSidecar
from mcp_offload.store.content_index import Buffer

log = logging.getLogger(__name__)

INTERVAL = 4 * 1024  # bytes between checkpoints: bounds the forward scan of one lookup
MAX_LEVELS = 4_000_000  # stored (checkpoint, level) pairs; deeper documents get sparser checkpoints
CACHE_ENTRIES = 16  # structure indexes kept in this process (~3 MB each for 100 MB of JSON, ≤ ~100 MB)
WARM_MIN_BYTES = 1 << 20  # smaller outputs build their index at first search in under ~10 ms
WARM_QUEUE = 2  # warm-ups queued or running at once (each holds its output's bytes until built)

Int64s = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]

_OPEN = (ord("["), ord("{"))
_CLOSE = (ord("]"), ord("}"))
_COMMA = ord(",")
_RUN_STEPS = 32  # backslash-run steps in `_string_quotes` before the rest are measured another way


@dataclass(frozen=True, slots=True)
class Level:
    """One open container at a checkpoint (or during a forward scan: see json_locate.Cursor)."""

    open: int  # byte of its "[" or "{"
    is_array: bool
    count: int  # commas seen at this level: the current element's index
    member: int  # byte of the last "{", "[" or "," at this level


@dataclass(frozen=True, slots=True)
class JsonStructure:
    """Checkpoints: `pos[k]` is a structural byte; the stack just before it is levels `off[k]:off[k+1]`."""

    size: int
    pos: Int64s
    off: Int64s
    records: Int64s  # top-level values that started before pos[k]
    level_open: Int64s
    level_array: Bools
    level_count: Int64s
    level_member: Int64s

    def checkpoint_before(self, byte: int) -> int:
        """Index of the last checkpoint at or before `byte` (-1: none, start from the beginning)."""
        return int(np.searchsorted(self.pos, byte, side="right")) - 1

    def stack(self, k: int) -> list[Level]:
        lo, hi = int(self.off[k]), int(self.off[k + 1])
        return [
            Level(int(o), bool(a), int(c), int(m))
            for o, a, c, m in zip(
                self.level_open[lo:hi],
                self.level_array[lo:hi],
                self.level_count[lo:hi],
                self.level_member[lo:hi],
                strict=True,
            )
        ]

    def depth(self, k: int) -> int:
        return int(self.off[k + 1] - self.off[k])

    def open_at(self, k: int, level: int) -> int:
        """Byte of the opener of 0-based `level` in checkpoint k's stack (-1 when the stack is shallower)."""
        if level >= self.depth(k):
            return -1
        return int(self.level_open[int(self.off[k]) + level])

    @property
    def nbytes(self) -> int:
        arrays = (self.pos, self.off, self.records, self.level_open, self.level_array, self.level_count)
        return sum(a.nbytes for a in arrays) + self.level_member.nbytes


def _string_quotes(b: npt.NDArray[np.uint8]) -> Int64s:
    """Positions of the quotes that open or close strings (those not escaped by an odd backslash run).

    Only a quote right after a backslash can be escaped, so only those are looked at: the length of the backslash
    run before each is found by stepping back one byte at a time over the ones still in a run (runs are short; after
    `_RUN_STEPS` steps the few left are measured against the list of all backslashes instead). Finding every
    backslash and a binary search per quote, as before, took 2.7x as long on 100 MB."""
    quotes = np.flatnonzero(b == 0x22)
    if not len(quotes):
        return quotes
    after_backslash = b[np.maximum(quotes - 1, 0)] == 0x5C  # a quote at byte 0 reads itself: never a backslash
    candidates = np.flatnonzero(after_backslash)  # indexes into `quotes`
    if not len(candidates):
        return quotes
    at = quotes[candidates]
    run = np.ones(len(at), dtype=np.int64)  # backslashes right before each candidate
    before = at - 2  # the byte before the run so far
    active = np.arange(len(at))
    for _ in range(_RUN_STEPS):
        if not len(active):
            break
        edge = before[active]
        more = edge >= 0
        more[more] = b[edge[more]] == 0x5C
        active = active[more]
        run[active] += 1
        before[active] -= 1
    if len(active):  # long runs: measured from where each run starts
        backslashes = np.flatnonzero(b == 0x5C)
        run_first = np.ones(len(backslashes), dtype=np.bool_)
        run_first[1:] = backslashes[1:] != backslashes[:-1] + 1
        run_start = np.maximum.accumulate(np.where(run_first, backslashes, 0))
        last = np.searchsorted(backslashes, at[active] - 1)
        run[active] = at[active] - run_start[last]
    escaped = np.zeros(len(quotes), dtype=np.bool_)
    escaped[candidates[(run & 1) == 1]] = True
    unescaped: Int64s = quotes[~escaped]
    return unescaped


def _structural(b: npt.NDArray[np.uint8]) -> Int64s:
    """Positions of `[`, `]`, `{`, `}` and `,` (strings included). `[`/`{` and `]`/`}` differ only in bit 5, so
    three comparisons find them: 1.8x faster than a lookup table over every byte on 100 MB."""
    folded = b | np.uint8(0x20)
    found: Int64s = np.flatnonzero((folded == 0x7B) | (folded == 0x7D) | (b == _COMMA))
    return found


def build_structure(data: Buffer) -> JsonStructure:
    """The checkpoint index of JSON or JSON Lines bytes (see the module docstring)."""
    b = np.frombuffer(data, dtype=np.uint8)
    size = len(b)
    quotes = _string_quotes(b)
    structural = _structural(b)
    if len(quotes):
        structural = structural[(np.searchsorted(quotes, structural) & 1) == 0]
    chars = b[structural]
    is_open = (chars == _OPEN[0]) | (chars == _OPEN[1])
    is_close = (chars == _CLOSE[0]) | (chars == _CLOSE[1])
    delta = is_open.astype(np.int32) - is_close.astype(np.int32)
    depth_after = np.cumsum(delta, dtype=np.int32)
    depth_before = depth_after - delta
    count = len(structural)

    targets = np.arange(0, max(size, 1), INTERVAL, dtype=np.int64)
    cps = np.unique(np.searchsorted(structural, targets))
    cps = cps[cps < count]
    depths = np.maximum(depth_before[cps].astype(np.int64), 0) if count else np.zeros(0, np.int64)
    if len(cps) and int(depths.sum()) > MAX_LEVELS:
        stride = -(-int(depths.sum()) // MAX_LEVELS)
        cps, depths = cps[::stride], depths[::stride]
    off = np.zeros(len(cps) + 1, dtype=np.int64)
    np.cumsum(depths, out=off[1:])
    top_opens = np.cumsum(is_open & (depth_after == 1), dtype=np.int64)
    records = np.where(cps > 0, top_opens[np.maximum(cps - 1, 0)], 0) if count else np.zeros(0, np.int64)

    # Per level: the openers (level = depth after) and commas (level = depth) in document order.
    keep = ~is_close
    member_idx = np.flatnonzero(keep)
    member_level = depth_after[member_idx]
    order = np.argsort(np.clip(member_level, 0, 65535).astype(np.uint16), kind="stable")
    g_idx = member_idx[order]  # structural index, grouped by level, in document order within a level
    g_level = member_level[order].astype(np.int64)
    g_open = is_open[g_idx]
    g_key = g_level * (count + 1) + g_idx
    g_last_open = np.maximum.accumulate(np.where(g_open, np.arange(len(g_idx)), 0))
    g_commas = np.cumsum(~g_open, dtype=np.int64)

    # One (checkpoint, level) pair per open level of each checkpoint's stack.
    total = int(off[-1])
    pair_cp = np.repeat(np.arange(len(cps)), depths)
    pair_level = np.arange(total, dtype=np.int64) - np.repeat(off[:-1], depths) + 1
    j = np.maximum(np.searchsorted(g_key, pair_level * (count + 1) + cps[pair_cp]) - 1, 0)
    opener = g_last_open[j]
    level_open = structural[g_idx[opener]].astype(np.int64)
    return JsonStructure(
        size=size,
        pos=structural[cps].astype(np.int64),
        off=off,
        records=records.astype(np.int64),
        level_open=level_open,
        level_array=b[level_open] == _OPEN[0],
        level_count=(g_commas[j] - g_commas[opener]).astype(np.int64),
        level_member=structural[g_idx[j]].astype(np.int64),
    )


class _StructureCache(BuildOnceCache[JsonStructure]):
    """A small LRU of structure indexes, shared by the worker threads of one process. One build per key at a
    time: a search that wants an index being built (say, by the warm-up after offload) waits for it."""

    def __init__(self, entries: int) -> None:
        super().__init__(entries, weigh=lambda _: 1)
        self.warming = 0  # warm-ups queued or running
        self.builds = 0  # indexes built from a document (not loaded from a sidecar): for tests and the benchmark
        self._warmer: ThreadPoolExecutor | None = None

    def get(self, key: OutputKey, data: Buffer, sidecar: OutputSidecar | None = None) -> JsonStructure:
        return self.get_or_build(key, lambda: self._load_or_build(key, data, sidecar))

    def _load_or_build(self, key: OutputKey, data: Buffer, sidecar: OutputSidecar | None) -> JsonStructure:
        """From the output's sidecar when it holds this output's index, else built (and then kept there)."""
        from mcp_offload.retrieve.json_structure_file import (
            StructureFileInvalid,
            dump_structure,
            load_structure,
            max_file_bytes,
        )

        keep = sidecar is not None and key[2] >= WARM_MIN_BYTES
        if keep and sidecar is not None:
            payload = sidecar.read(max_file_bytes(key[2]))
            if payload is not None:
                try:
                    return load_structure(payload, key)
                except StructureFileInvalid as exc:
                    log.warning("a stored JSON structure index failed its checks (%s); rebuilding it", exc)
        structure = build_structure(data)
        self.builds += 1
        if keep and sidecar is not None:
            try:
                sidecar.write([dump_structure(structure, key)])
            except OSError as exc:  # over the store's quota, a full disk: it is a cache, the index is still used
                log.info("the JSON structure index was not kept beside its output: %s", exc)
        return structure

    def warm(self, key: OutputKey, data: Buffer, sidecar: OutputSidecar | None = None) -> bool:
        """Build the index of `data` in a background thread, so the first search with JSON paths finds it ready
        (a model's next call comes seconds later), and keep it in `sidecar`. At most `WARM_QUEUE` at a time; False
        when skipped."""
        with self.lock:
            if key in self.items or key in self.building or self.warming >= WARM_QUEUE:
                return False
            self.warming += 1
            if self._warmer is None:
                self._warmer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="json-structure")
            warmer = self._warmer
        warmer.submit(self._warm, key, data, sidecar)
        return True

    def _warm(self, key: OutputKey, data: Buffer, sidecar: OutputSidecar | None) -> None:
        try:
            self.get(key, data, sidecar)
        except Exception:  # e.g. MemoryError: the first search builds it instead, and reports what goes wrong
            log.warning("building the JSON structure index in the background failed", exc_info=True)
        finally:
            with self.lock:
                self.warming -= 1


STRUCTURES = _StructureCache(CACHE_ENTRIES)


def structure_of(handle: str, created: float, data: Buffer, sidecar: OutputSidecar | None = None) -> JsonStructure:
    """The (cached) structure index of one stored output's bytes; `sidecar`: where it is kept beside the output."""
    return STRUCTURES.get((handle, created, len(data)), data, sidecar)


def warm_structure(handle: str, created: float, data: bytes, sidecar: OutputSidecar | None = None) -> bool:
    """Start building the structure index of a just-stored JSON / JSON Lines output (from its bytes in memory)
    when it is large enough for the first search to notice, to be kept in `sidecar`; True when started."""
    if len(data) < WARM_MIN_BYTES:
        return False
    return STRUCTURES.warm((handle, created, len(data)), data, sidecar)
