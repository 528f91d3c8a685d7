"""The passage index's life: built in the background at offload (one build per output, questions during it wait
for it), kept in a sidecar with the output on the filesystem store (reused after a restart, rebuilt when corrupt,
removed with its output on delete and expiry), a build stopped when its output goes away, and sharded indexes
ranking as well as whole ones (the relevance set)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from mcp_offload.core import outputs
from mcp_offload.core.services import Services, build_services
from mcp_offload.retrieve.ranked import fts_index, index_cache
from mcp_offload.retrieve.ranked.index_cache import INDEXES, SIDECAR
from mcp_offload.retrieve.ranked.index_file import IndexFileInvalid, dump_index, load_index
from mcp_offload.settings import Settings
from mcp_offload.store.fs import FilesystemStore
from mcp_offload.store.lifecycle import StoreLimits
from support.planted_log import PLANTED, planted_log
from support.ranked_relevance import corpora, load_cases, score_in_services

QUESTION = "where is the timeout about the payment service?"


def big_log(lines: int = 40_000, planted_at: int = 31_337) -> str:
    """~2.6 MB of log lines (over the background-build and sidecar thresholds, so two shards) with one answer."""
    return planted_log(lines, planted_at, tenants=True) + "\n"


@pytest.fixture(autouse=True)
def _fresh_indexes() -> Iterator[None]:
    INDEXES.wait_idle(30)
    INDEXES.clear()
    yield
    INDEXES.wait_idle(30)
    INDEXES.clear()


def sidecar_path(store_dir: Path, scope: outputs.SessionScope, handle: str) -> Path:
    return store_dir / "v1" / "scopes" / scope.key / handle / f"sidecar.{SIDECAR}"


async def ask(services: Services, scope: outputs.SessionScope, handle: str | None = None) -> int:
    """The best passage's first line for QUESTION, checked to hold the planted answer."""
    out = await outputs.search(services, scope, QUESTION, handle=handle, ranked=True, max_results=3)
    assert out.passages, out
    best = out.passages[0]
    assert best.start_line <= 31_337 <= best.end_line, out.passages
    assert any(line.text == PLANTED for line in best.lines)
    return best.start_line


def counts() -> tuple[int, int]:
    return INDEXES.builds, INDEXES.loads


async def test_offload_starts_the_build_and_the_question_does_not_rebuild(services: Services, store_dir: Path) -> None:
    scope = outputs.SessionScope.new()
    before = counts()
    stored = await outputs.offload(services, scope, big_log(), name="app log")
    assert INDEXES.wait_idle(30)
    assert counts() == (before[0] + 1, before[1])  # built in the background, before any question
    index = INDEXES.items[await key_of(services, scope, stored.handle)]
    assert len(index.shards) == 1  # the background build runs on one thread
    assert sidecar_path(store_dir, scope, stored.handle).stat().st_size > 100_000
    await ask(services, scope)
    await ask(services, scope, stored.handle)
    assert counts() == (before[0] + 1, before[1])  # the questions used it: no build, no load


async def test_small_outputs_build_at_the_first_question_and_keep_no_sidecar(
    services: Services, store_dir: Path
) -> None:
    scope = outputs.SessionScope.new()
    before = counts()
    text = big_log(lines=4000, planted_at=3000)  # ~260 KB: under WARM_MIN and PERSIST_MIN
    stored = await outputs.offload(services, scope, text)
    assert INDEXES.wait_idle(30)
    assert counts() == before
    out = await outputs.search(services, scope, QUESTION, ranked=True, max_results=1)
    assert out.passages and out.passages[0].start_line <= 3000 <= out.passages[0].end_line
    assert counts() == (before[0] + 1, before[1])
    assert not sidecar_path(store_dir, scope, stored.handle).exists()


async def test_questions_during_the_build_share_one_build(services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the background build (WARM_MIN raised), six questions at once: one builds, five wait for it; with
    it, questions right after the offload wait for the background build."""
    scope = outputs.SessionScope.new()
    monkeypatch.setattr(index_cache, "WARM_MIN", 1 << 40)
    monkeypatch.setattr(fts_index, "BATCH", 128)  # ~20 batches: every builder thread gets some
    monkeypatch.setattr(fts_index, "builders_now", lambda: fts_index.BUILDERS)  # as if a core were idle
    stored = await outputs.offload(services, scope, big_log())
    before = counts()
    starts: list[int] = []

    async def one() -> None:
        starts.append(await ask(services, scope, stored.handle))

    async with anyio.create_task_group() as tg:
        for _ in range(6):
            tg.start_soon(one)
    assert counts() == (before[0] + 1, before[1]) and len(set(starts)) == 1
    lazy = INDEXES.items[await key_of(services, scope, stored.handle)]
    assert len(lazy.shards) == fts_index.BUILDERS  # a question's build uses every builder thread

    monkeypatch.setattr(index_cache, "WARM_MIN", 1 << 20)
    other = outputs.SessionScope.new()
    before = counts()
    stored = await outputs.offload(services, other, big_log())
    key = await key_of(services, other, stored.handle)
    assert INDEXES.warming == 1 or key in INDEXES.items  # queued at offload, before any question
    async with anyio.create_task_group() as tg:
        for _ in range(4):
            tg.start_soon(ask, services, other, stored.handle)
    assert INDEXES.wait_idle(30)
    assert counts() == (before[0] + 1, before[1])


async def test_a_restart_loads_the_sidecar_instead_of_rebuilding(settings: Settings, store_dir: Path) -> None:
    scope = outputs.SessionScope.named("restarted-agent")
    first = build_services(settings)
    try:
        stored = await outputs.offload(first, scope, big_log())
        assert INDEXES.wait_idle(30)
        expected = await ask(first, scope)
    finally:
        await first.aclose()
    INDEXES.clear()  # a new process: nothing in memory
    before = counts()
    second = build_services(settings)
    try:
        assert await ask(second, scope, stored.handle) == expected
        assert counts() == (before[0], before[1] + 1)  # loaded, not built
    finally:
        await second.aclose()
    assert sidecar_path(store_dir, scope, stored.handle).exists()


@pytest.mark.parametrize(
    "damage",
    ["flip a byte", "truncate", "empty", "garbage", "another output's index"],
)
async def test_a_corrupt_sidecar_is_rebuilt_not_trusted(
    services: Services, store_dir: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    scope = outputs.SessionScope.new()
    stored = await outputs.offload(services, scope, big_log())
    other = await outputs.offload(services, scope, big_log(planted_at=777))
    assert INDEXES.wait_idle(30)
    path = sidecar_path(store_dir, scope, stored.handle)
    good = path.read_bytes()
    at = len(good) * 3 // 4  # inside a shard's database pages, where only the digest notices
    bad = {
        "flip a byte": good[:at] + bytes([good[at] ^ 0x10]) + good[at + 1 :],
        "truncate": good[: len(good) // 2],
        "empty": b"",
        "garbage": b"MOPX1\n" + b"\xff" * 4096,
        "another output's index": sidecar_path(store_dir, scope, other.handle).read_bytes(),
    }[damage]
    path.write_bytes(bad)
    INDEXES.clear()
    before = counts()
    with caplog.at_level(logging.WARNING, logger="mcp_offload.retrieve.ranked.index_cache"):
        await ask(services, scope, stored.handle)
    assert counts() == (before[0] + 1, before[1])  # rebuilt, not loaded
    if damage != "empty":  # an empty file is "no index yet"; anything else failed a check, and says so
        assert any("failed its checks" in r.getMessage() for r in caplog.records)
    rewritten = path.read_bytes()
    assert rewritten != bad and len(rewritten) > 100_000  # a valid index replaced it
    INDEXES.clear()
    await ask(services, scope, stored.handle)
    assert counts() == (before[0] + 1, before[1] + 1)


async def test_delete_and_expiry_remove_the_sidecar(settings: Settings, store_dir: Path) -> None:
    now = [time.time()]
    services = build_services(settings)
    services.store = FilesystemStore(store_dir, clock=lambda: now[0], limits=StoreLimits(ttl_s=3600))
    try:
        scope = outputs.SessionScope.new()
        deleted = await outputs.offload(services, scope, big_log())
        expiring = await outputs.offload(services, scope, big_log())
        assert INDEXES.wait_idle(30)
        paths = [sidecar_path(store_dir, scope, h.handle) for h in (deleted, expiring)]
        assert all(p.exists() for p in paths)
        await services.store.delete(scope.key, deleted.handle)
        assert not paths[0].exists()
        now[0] += 3601
        report = await services.store.sweep()
        assert report.expired == 1 and not paths[1].exists()
        assert not list((store_dir / "v1" / "tmp").iterdir())  # nothing left behind either
    finally:
        await services.aclose()


async def test_an_index_the_quota_has_no_room_for_stays_in_memory(
    store_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A session quota with room for the output but not for its index: the background build keeps the index in
    memory (no sidecar, no second output evicted for it), and the question uses it without rebuilding."""
    text = big_log()
    room = len(text.encode()) + 300_000  # the output and a small one; the index (~half the output) does not fit
    settings = Settings(store=str(store_dir), store_session_max_bytes=room, jq_workers=1)
    services = build_services(settings)
    try:
        scope = outputs.SessionScope.new()
        small = await outputs.offload(services, scope, "a small output\n" * 1000)
        before = counts()
        with caplog.at_level(logging.INFO, logger="mcp_offload.retrieve.ranked.index_cache"):
            stored = await outputs.offload(services, scope, text)
            assert INDEXES.wait_idle(30)
        assert counts() == (before[0] + 1, before[1])
        assert await key_of(services, scope, stored.handle) in INDEXES.items  # kept, not dropped as "gone"
        assert not sidecar_path(store_dir, scope, stored.handle).exists()
        assert any("kept in memory only" in r.getMessage() for r in caplog.records)
        assert {m.handle for m in await services.store.list(scope.key)} == {small.handle, stored.handle}
        await ask(services, scope, stored.handle)
        assert counts() == (before[0] + 1, before[1])  # the question used the index in memory
    finally:
        await services.aclose()


async def test_a_build_stops_when_its_output_goes_away(
    services: Services, store_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Deleted before its background build starts: skipped; deleted while it runs: stopped between batches. Either
    way nothing is cached and no sidecar is left."""
    scope = outputs.SessionScope.new()
    monkeypatch.setattr(index_cache, "WARM_MIN", 1 << 40)
    text = big_log(lines=200_000, planted_at=150_000)  # ~13 MB: a build long enough to delete it mid-way
    stored = await outputs.offload(services, scope, text)
    key = await key_of(services, scope, stored.handle)
    sidecar = services.store.sidecar(scope.key, stored.handle, SIDECAR)
    monkeypatch.setattr(fts_index, "BATCH", 128)  # check for cancellation often
    monkeypatch.setattr(index_cache, "WARM_MIN", 1 << 20)
    before = counts()

    with caplog.at_level(logging.INFO, logger="mcp_offload.retrieve.ranked.index_cache"):
        assert INDEXES.warm(key, text.encode(), sidecar)
        deadline = time.monotonic() + 30
        while key not in INDEXES.building and time.monotonic() < deadline:  # noqa: ASYNC110  (another thread's)
            await anyio.sleep(0.001)
        await services.store.delete(scope.key, stored.handle)
        assert INDEXES.wait_idle(30)
    assert key not in INDEXES.items and counts()[1] == before[1]
    assert any("output is gone" in r.getMessage() for r in caplog.records)
    assert not sidecar_path(store_dir, scope, stored.handle).exists()

    # queued for an output already deleted: nothing is built at all
    monkeypatch.undo()
    again = await outputs.offload(services, scope, big_log())
    assert INDEXES.wait_idle(30)
    INDEXES.clear()
    gone = await key_of(services, scope, again.handle)
    side = services.store.sidecar(scope.key, again.handle, SIDECAR)
    await services.store.delete(scope.key, again.handle)
    before = counts()
    assert INDEXES.warm(gone, big_log().encode(), side)
    assert INDEXES.wait_idle(30)
    assert counts() == before and gone not in INDEXES.items


async def test_a_failed_background_build_is_logged_and_the_question_builds(
    services: Services, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    scope = outputs.SessionScope.new()
    real = fts_index.build_index
    calls = [0]

    def failing_once(data: object, **kw: object) -> fts_index.PassageIndex:
        calls[0] += 1
        if calls[0] == 1:
            raise MemoryError("no room for the index")
        return real(data, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(index_cache, "build_index", failing_once)
    with caplog.at_level(logging.WARNING, logger="mcp_offload.retrieve.ranked.index_cache"):
        stored = await outputs.offload(services, scope, big_log())
        assert INDEXES.wait_idle(30)
    failed = [r for r in caplog.records if "background failed" in r.getMessage()]
    assert failed and failed[0].fields == {  # type: ignore[attr-defined]
        "handle": stored.handle,
        "error": "MemoryError: no room for the index",
    }
    before = counts()
    await ask(services, scope, stored.handle)
    assert counts() == (before[0] + 1, before[1]) and calls[0] == 2


def test_background_builds_wait_in_a_bounded_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    """At most WARM_QUEUE outputs and WARM_QUEUE_BYTES of their bytes wait; the rest are left to the first question."""
    monkeypatch.setattr(index_cache, "WARM_QUEUE", 4)
    data = big_log().encode()
    keys = [(f"out_q{i}", 1.0, len(data)) for i in range(8)]
    started = [INDEXES.warm(key, data, None) for key in keys]
    assert started == [True] * index_cache.WARM_QUEUE + [False] * (8 - index_cache.WARM_QUEUE)
    assert INDEXES.wait_idle(60)
    INDEXES.clear()
    monkeypatch.setattr(index_cache, "WARM_QUEUE_BYTES", 2 * len(data) - 1)
    started = [INDEXES.warm((f"out_b{i}", 1.0, len(data)), data, None) for i in range(3)]
    assert started == [True, False, False]  # the first goes alone, whatever its size; a second would hold too much
    assert INDEXES.wait_idle(60) and INDEXES.warming == 0 and INDEXES.warming_bytes == 0
    assert INDEXES.warm(("out_small", 1.0, index_cache.WARM_MIN - 1), b"x" * (index_cache.WARM_MIN - 1), None) is False


def test_background_builds_give_way_to_offloads_in_progress() -> None:
    data = big_log().encode()
    key = ("out_yield", 1.0, len(data))
    with index_cache.offload_in_progress():
        assert INDEXES.warm(key, data, None)
        time.sleep(0.3)  # under YIELD_S: paused at its first checkpoint, nothing built yet
        assert key in INDEXES.building and key not in INDEXES.items
    assert INDEXES.wait_idle(30) and key in INDEXES.items


def test_a_build_takes_a_second_thread_only_when_a_core_is_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fts_index, "BUILDERS", 2)
    cpus = os.cpu_count() or 1
    for load, expected in ((0.1, min(2, cpus)), (cpus - 0.5, 1), (cpus + 3.0, 1)):
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, load, load))
        assert fts_index.builders_now() == expected


def test_a_question_waiting_for_a_background_build_stops_its_pauses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_cache, "YIELD_S", 5.0)
    monkeypatch.setattr(fts_index, "BATCH", 256)  # ~10 batches: ~50 s if each paused
    data = big_log().encode()
    key = ("out_wait", 1.0, len(data))
    with index_cache.offload_in_progress():  # an offload that goes on and on
        assert INDEXES.warm(key, data, None)
        deadline = time.monotonic() + 30
        while key not in INDEXES.building and time.monotonic() < deadline:
            time.sleep(0.001)
        before = INDEXES.builds
        started = time.monotonic()
        index = INDEXES.get(key, lambda: data)
        assert time.monotonic() - started < 4.0  # one pause at most, not one per batch
    assert INDEXES.builds == before + 1 and index.passages > 2000  # it waited for that build, not a second one


def test_queued_background_builds_do_not_hold_the_process_at_exit(tmp_path: Path) -> None:
    """Builds paused behind an offload that never ends: the process still exits at once (a daemon builder)."""
    script = tmp_path / "exit.py"
    script.write_text(
        "import time\n"
        "from mcp_offload.retrieve.ranked import index_cache\n"
        "index_cache.YIELD_S = 30.0\n"
        "data = b'2026-03-02 INFO payment service timed out after 30 s\\n' * 60_000\n"
        "held = index_cache.offload_in_progress()\n"
        "held.__enter__()\n"
        "assert all(index_cache.INDEXES.warm((f'out_{i}', 1.0, len(data)), data, None) for i in range(3))\n"
        "time.sleep(0.2)\n"
        "assert index_cache.INDEXES.building\n"
    )
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 10  # not 3 builds x batches x 30 s of pauses


@pytest.mark.parametrize("builders", [1, 2, 3])
def test_index_file_round_trip_and_checks(builders: int) -> None:
    data = big_log().encode()
    index = fts_index.build_index(data, builders=builders)
    assert 1 <= len(index.shards) <= builders and sum(s.rows for s in index.shards) == index.passages
    key = ("out_x", 1234.5, len(data))
    payload = b"".join(dump_index(index, key))
    loaded = load_index(payload, key)
    match = '"timeout" OR "payment"'
    assert loaded.top(match, 5) == index.top(match, 5) and loaded.tokens == index.tokens
    assert (loaded.bounds == index.bounds).all()
    for wrong in (("out_y", 1234.5, len(data)), ("out_x", 1234.0, len(data)), ("out_x", 1234.5, len(data) + 1)):
        with pytest.raises(IndexFileInvalid):
            load_index(payload, wrong)


async def test_relevance_holds_with_sharded_indexes(services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    """The relevance set with every corpus cut into shards (their own BM25 statistics, merged and re-scored):
    >= 90 % in the top 3, across the session and within the output."""
    monkeypatch.setattr(fts_index, "PARALLEL_MIN", 16 << 10)
    monkeypatch.setattr(fts_index, "builders_now", lambda: 2)
    monkeypatch.setattr(fts_index, "BATCH", 4)  # many small, slow batches: both builder threads get some of each
    take = fts_index._Batches.take

    def slow_take(self: fts_index._Batches) -> range | None:
        time.sleep(0.002)
        return take(self)

    monkeypatch.setattr(fts_index._Batches, "take", slow_take)
    across, within = await score_in_services(services)
    assert [len(ix.shards) for ix in INDEXES.items.values()] == [2] * len(corpora(load_cases()))
    assert across.share >= 0.9, across.misses
    assert within.share >= 0.9, within.misses


async def key_of(services: Services, scope: outputs.SessionScope, handle: str) -> tuple[str, float, int]:
    meta = await services.store.meta(scope.key, handle)
    return (handle, meta.created, meta.size)
