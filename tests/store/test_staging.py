"""Staged content (`Store.stage`): a big output's bytes are written while its preview is built, then published by
`put`. The filesystem store writes and fsyncs the content file in a thread of its own; what `put` publishes is what
an unstaged put publishes (bytes, index, metadata, recency from the publish); a discarded or failed staging leaves
nothing, in `tmp/` or published; Redis does not stage. Through the core: the thread path and the ingest worker
(sent the bytes the serving process stages) stage each big output once, and a worker that dies mid-call
loses nothing: the thread prepares the output from the same bytes, and its staging is published."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from mcp_offload.core import outputs
from mcp_offload.core.ingest import STAGE_MIN_CHARS
from mcp_offload.core.services import Services, build_services
from mcp_offload.errors import StoreFull, StoreUnavailable, UnknownHandle
from mcp_offload.settings import Settings
from mcp_offload.store.base import StagedContent
from mcp_offload.store.content_index import ContentIndex
from mcp_offload.store.fs import FilesystemStore
from mcp_offload.store.fs.publish import StagedFile
from mcp_offload.store.lifecycle import StoreLimits
from mcp_offload.store.redis import RedisStore
from support.store import SCOPE_A, FakeClock, make_meta

DATA = ("staged ✓ line\n" * 200_000).encode()  # 3 MB


def _tmp_entries(store: FilesystemStore) -> list[str]:
    return sorted(os.listdir(store.root / "v1" / "tmp"))


def _wait_until_empty(store: FilesystemStore, staged: object = None, timeout_s: float = 30.0) -> list[str]:
    """`tmp/` once empty (or at the timeout); first, when given, once `staged`'s write has ended (before it, the
    directory may not be made yet)."""
    if isinstance(staged, StagedFile):
        assert staged._done.wait(timeout_s)
    deadline = time.monotonic() + timeout_s
    while _tmp_entries(store) and time.monotonic() < deadline:
        time.sleep(0.01)
    return _tmp_entries(store)


async def test_a_staged_put_publishes_what_a_plain_put_does(tmp_path: Path) -> None:
    clock = FakeClock()
    clock.now = 1_000.0
    store = FilesystemStore(tmp_path / "store", clock=clock)
    staged = store.stage(DATA)
    assert staged is not None
    clock.advance(500)  # the preview took a while: the output's recency starts at its publish
    meta, index = make_meta(DATA, name="staged"), ContentIndex.build(DATA)
    await store.put(SCOPE_A, meta, index, DATA, staged)
    plain = make_meta(DATA, name="plain")
    await store.put(SCOPE_A, plain, index, DATA)
    for handle, expected in ((meta.handle, meta), (plain.handle, plain)):
        async with store.open(SCOPE_A, handle) as out:
            assert out.meta == expected and out.read_bytes(0, len(DATA)) == DATA
            assert out.index.to_bytes() == index.to_bytes()
    content = store.root / "v1" / "scopes"
    (staged_file,) = content.glob(f"*/{meta.handle}/content")
    assert staged_file.stat().st_mtime == pytest.approx(1_500.0)
    assert _tmp_entries(store) == []


@pytest.mark.parametrize("when", ["while it writes", "after the write"])
async def test_a_discarded_staging_leaves_nothing(tmp_path: Path, when: str, monkeypatch: pytest.MonkeyPatch) -> None:
    store = FilesystemStore(tmp_path / "store")
    gate = threading.Event()  # holds the staging thread in its write until the discard is in
    real_write = store._write_file

    def held_write(dir_fd: int, name: str, payload: bytes) -> None:
        gate.wait(60)
        real_write(dir_fd, name, payload)

    if when == "while it writes":
        monkeypatch.setattr(store, "_write_file", held_write)
    else:
        gate.set()
    staged = store.stage(DATA)
    assert isinstance(staged, StagedFile)
    if when == "after the write":
        assert staged._done.wait(60)
        assert len(_tmp_entries(store)) == 1  # written, held open
    staged.discard()
    staged.discard()  # idempotent
    if when == "while it writes":
        assert not staged._done.is_set()  # the discard came first
        gate.set()
    assert _wait_until_empty(store, staged) == []
    assert await store.list(SCOPE_A) == []
    with pytest.raises(RuntimeError, match="discarded"):
        staged.take()  # a put of it now is a programming error, not a publish of nothing


async def test_a_failed_staged_write_is_the_puts_error_and_nothing_is_visible(tmp_path: Path) -> None:
    store = FilesystemStore(tmp_path / "store")
    tmp = store.root / "v1" / "tmp"
    tmp.rename(store.root / "v1" / "tmp-away")
    tmp.write_bytes(b"")  # not a directory: the staging thread cannot make its directory
    try:
        staged = store.stage(DATA)
        assert staged is not None
        meta = make_meta(DATA)
        with pytest.raises(StoreUnavailable, match="could not be written"):
            await store.put(SCOPE_A, meta, ContentIndex.build(DATA), DATA, staged)
    finally:
        tmp.unlink()
        (store.root / "v1" / "tmp-away").rename(tmp)
    with pytest.raises(UnknownHandle):
        await store.meta(SCOPE_A, meta.handle)
    assert _tmp_entries(store) == []


async def test_a_refused_put_discards_its_staging(tmp_path: Path) -> None:
    store = FilesystemStore(tmp_path / "store")
    staged = store.stage(DATA)
    assert staged is not None
    with pytest.raises(ValueError, match="index does not describe"):
        await store.put(SCOPE_A, make_meta(DATA), ContentIndex.build(DATA[:-1]), DATA, staged)
    assert _wait_until_empty(store, staged) == []


async def test_bytes_that_can_never_fit_are_not_staged_and_put_says_why(tmp_path: Path) -> None:
    store = FilesystemStore(tmp_path / "store", limits=StoreLimits(max_bytes=1_000_000, scope_max_bytes=1_000_000))
    assert store.stage(DATA) is None
    with pytest.raises(StoreFull):
        await store.put(SCOPE_A, make_meta(DATA), ContentIndex.build(DATA), DATA)
    assert _tmp_entries(store) == []


async def test_redis_does_not_stage_and_drops_a_staging_it_is_given(redis_url: str, tmp_path: Path) -> None:
    store = RedisStore(redis_url, prefix="mcp-offload-test:staging")
    fs = FilesystemStore(tmp_path / "store")
    try:
        assert store.stage(DATA) is None
        foreign = fs.stage(DATA)
        assert foreign is not None
        meta = make_meta(DATA)
        await store.put(SCOPE_A, meta, ContentIndex.build(DATA), DATA, foreign)
        async with store.open(SCOPE_A, meta.handle) as out:
            assert out.read_bytes(0, len(DATA)) == DATA
        assert _wait_until_empty(fs, foreign) == []
    finally:
        await store.aclose()


# -- through the core: each big output staged once, from the thread or the worker ------------------------------------
class _StageSpy:
    """Records each staging the core asks for (the real one runs) and what became of it."""

    def __init__(self, store: FilesystemStore) -> None:
        self.sizes: list[int] = []
        self._real = store.stage
        self.on_stage: list[object] = []

    def __call__(self, data: bytes) -> StagedContent | None:
        self.sizes.append(len(data))
        for hook in self.on_stage:
            hook()  # type: ignore[operator]
        return self._real(data)


@pytest.fixture
async def services(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Services]:
    workers = int(request.param)
    built = build_services(Settings(store=str(tmp_path / "store"), ingest_workers=workers))
    try:
        if workers:
            built.ingest.start()
            with anyio.fail_after(120):
                while not built.ingest.ready:  # noqa: ASYNC110  (a flag of another thread: polled)
                    await anyio.sleep(0.05)
        yield built
    finally:
        await built.aclose()


def _spy(services: Services, monkeypatch: pytest.MonkeyPatch) -> tuple[FilesystemStore, _StageSpy]:
    store = services.store
    assert isinstance(store, FilesystemStore)
    spy = _StageSpy(store)
    monkeypatch.setattr(store, "stage", spy)
    return store, spy


@pytest.mark.parametrize("services", [0, 1], ids=["thread", "worker"], indirect=True)
async def test_a_big_output_is_staged_once_and_a_small_one_not_at_all(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, spy = _spy(services, monkeypatch)
    text = DATA.decode()
    scope = outputs.SessionScope.named("s")
    stored = await outputs.offload(services, scope, text)
    small = await outputs.offload(services, scope, "x" * (STAGE_MIN_CHARS // 2))
    assert spy.sizes == [len(DATA)]
    for handle, expected in ((stored.handle, DATA), (small.handle, b"x" * (STAGE_MIN_CHARS // 2))):
        async with store.open(scope.key, handle) as out:
            assert out.read_bytes(0, out.meta.size) == expected
    assert _wait_until_empty(store) == []


@pytest.mark.parametrize("services", [1], ids=["worker"], indirect=True)
async def test_a_worker_dying_mid_call_keeps_the_staging_the_thread_then_publishes(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, spy = _spy(services, monkeypatch)
    (worker,) = services.ingest._all

    def kill_the_worker() -> None:  # staged: the worker is sent the bytes next, and is gone
        os.kill(worker.process.pid, signal.SIGKILL)
        worker.process.wait()

    spy.on_stage.append(kill_the_worker)
    scope = outputs.SessionScope.named("s")
    stored = await outputs.offload(services, scope, DATA.decode())  # prepared in a thread, from the same bytes
    assert spy.sizes == [len(DATA)]  # staged once
    async with store.open(scope.key, stored.handle) as out:
        assert out.read_bytes(0, out.meta.size) == DATA
    assert _wait_until_empty(store) == []
