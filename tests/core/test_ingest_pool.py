"""The ingest worker processes (`core/ingest_pool`): a big output is prepared in a worker, byte-identical to a thread's
preparation; errors come back as themselves; a worker killed mid-call loses nothing (the call is prepared in a
thread, a new worker starts); and a big ingest does not hold the serving process's event loop (a regression
catcher with a generous bound: the benchmark, bench/run.py --only isolation, measures the real figure)."""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import orjson
import pytest
import pytest_asyncio

from mcp_offload.core import ingest_pool, outputs
from mcp_offload.core.ingest import Prepared, encode_output, prepare_text
from mcp_offload.core.ingest_pool import PARSE_MIN_BYTES, POOL_MIN_CHARS, IngestPool, JsonInvalid, WorkerDied
from mcp_offload.core.services import Services, build_services
from mcp_offload.errors import TooLarge
from mcp_offload.preview.kinds import gc_paused
from mcp_offload.settings import Settings
from mcp_offload.tokens import load_counter


def _json(size: int) -> str:
    items = [{"id": i, "name": f"item-{i}", "tags": ["x", "y"][: i % 3], "owner": {"login": f"u{i % 97}"}} for i in
             range(size // 80)]  # fmt: skip
    return json.dumps({"count": len(items), "items": items})


def _log(size: int) -> str:
    lines = [f"2026-11-21T10:00:{i % 60:02d}Z {'ERROR' if i % 400 == 7 else 'INFO'} api: request {i} took {i % 97} ms"
             for i in range(size // 60)]  # fmt: skip
    return "\n".join(lines) + "\n"


async def _ready(pool: IngestPool) -> None:
    pool.start()
    with anyio.fail_after(120):  # a loaded machine: starting Python and loading the tokenizer can take seconds
        while not pool.ready:  # noqa: ASYNC110  (a flag of another thread: polled)
            await anyio.sleep(0.05)


@pytest.fixture
async def pooled(tmp_path: Path) -> AsyncIterator[Services]:
    """A pool of one worker of the test's own: for tests that kill it or change how it is sent bytes."""
    services = build_services(Settings(store=str(tmp_path / "store"), ingest_workers=1))
    try:
        await _ready(services.ingest)
        yield services
    finally:
        await services.aclose()


# One pool serves the tests that leave it as they found it (`on_shared_pool`, all on one xdist worker): a worker
# process costs about a second of CPU to start.
T = TypeVar("T", bound=Callable[..., Any])


def on_shared_pool(test: T) -> T:
    marked: T = pytest.mark.xdist_group("ingest-pool-shared")(pytest.mark.asyncio(loop_scope="module")(test))
    return marked


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Services]:
    services = build_services(Settings(store=str(tmp_path_factory.mktemp("shared") / "store"), ingest_workers=1))
    try:
        await _ready(services.ingest)
        yield services
    finally:
        await services.aclose()


def _accented(size: int) -> str:  # not ASCII: characters and bytes differ, so the index counts characters per block
    return "".join(f"línea {i}: ¿qué tal? — naïve café {'€' * (i % 5)}\n" for i in range(size // 40))


def _short_file(*pieces: bytes) -> int:
    """In place of `ingest_pool._share`: a file shorter than the size announced, which the worker cannot map."""
    fd = os.memfd_create("short", os.MFD_CLOEXEC)
    os.write(fd, pieces[0][:100])
    return fd


def _read_by(pid: int) -> int:
    """Bytes the process has read with read calls (its pipe included; a mapping's pages are not reads)."""
    io = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    return int(io["rchar"])


@pytest.mark.parametrize("make", [_json, _log, _accented], ids=["json", "log", "accented"])
@on_shared_pool
async def test_a_worker_prepares_what_a_thread_prepares_byte_for_byte(shared: Services, make: object) -> None:
    assert callable(make)
    text = make(POOL_MIN_CHARS * 2)
    (worker,) = shared.ingest._all
    read_before = _read_by(worker.process.pid)
    from_worker = await shared.ingest.prepare(*encode_output(shared.settings, text), "n", "offload", "out_" + "a" * 26)
    assert isinstance(from_worker, Prepared)  # it did run in the worker
    # it mapped the bytes from this process's in-memory file: it did not read them from its pipe
    assert _read_by(worker.process.pid) - read_before < POOL_MIN_CHARS
    here = prepare_text(
        shared.settings, load_counter(shared.settings.encoding), text, "n", "offload", "out_" + "a" * 26
    )
    assert from_worker.data == here.data == text.encode()
    assert from_worker.ingested.preview == here.ingested.preview
    assert from_worker.index == here.index
    worker_meta, meta = from_worker.ingested.meta, here.ingested.meta
    assert {**vars_of(worker_meta), "created": 0} == {**vars_of(meta), "created": 0}


async def test_bytes_a_worker_cannot_map_come_through_its_pipe(
    pooled: Services, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(ingest_pool, "_share", _short_file)
    (worker,) = pooled.ingest._all
    text = _accented(POOL_MIN_CHARS * 2)
    data = text.encode()
    read_before = _read_by(worker.process.pid)
    with caplog.at_level(logging.INFO, logger="mcp_offload.core.ingest_pool"):
        from_worker = await pooled.ingest.prepare(data, (), None, None, "out_" + "b" * 26)
    assert isinstance(from_worker, Prepared)
    assert _read_by(worker.process.pid) - read_before >= len(data)  # through the pipe, in full
    here = prepare_text(pooled.settings, load_counter(pooled.settings.encoding), text, None, None, "out_" + "b" * 26)
    assert (from_worker.data, from_worker.index, from_worker.ingested.preview) == (
        here.data,
        here.index,
        here.ingested.preview,
    )
    assert "could not map an output's bytes" in caplog.text and "sent through its pipe" in caplog.text
    assert not pooled.ingest._maps  # and from now on without trying
    read_before = _read_by(worker.process.pid)
    assert isinstance(await pooled.ingest.prepare(data, (), None, None, None), Prepared)
    assert _read_by(worker.process.pid) - read_before >= len(data)


@on_shared_pool
async def test_a_worker_parses_a_big_document_from_the_shared_file(shared: Services) -> None:
    document = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": _accented(PARSE_MIN_BYTES)}] * 3})
    pieces = [document[i : i + 65536] for i in range(0, len(document), 65536)]  # as a request body arrives
    (worker,) = shared.ingest._all
    read_before = _read_by(worker.process.pid)
    parsed = await shared.ingest.parse_json(pieces)
    assert parsed is not None
    value, joined = parsed
    assert value == orjson.loads(document) and joined == document
    assert _read_by(worker.process.pid) - read_before < PARSE_MIN_BYTES  # mapped, not read from the pipe
    with pytest.raises(JsonInvalid, match="unexpected content after document") as refused:
        await shared.ingest.parse_json([*pieces, b"]"])
    assert refused.value.document == document + b"]"


async def test_a_document_a_worker_cannot_map_comes_through_its_pipe(
    pooled: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest_pool, "_share", _short_file)
    document = orjson.dumps([_log(PARSE_MIN_BYTES * 2), {"n": 1}])
    pieces = [document[: len(document) // 2], document[len(document) // 2 :]]
    (worker,) = pooled.ingest._all
    read_before = _read_by(worker.process.pid)
    assert await pooled.ingest.parse_json(pieces) == (orjson.loads(document), document)
    assert _read_by(worker.process.pid) - read_before >= len(document)
    assert not pooled.ingest._maps


async def test_a_worker_never_maps_another_file_than_the_one_shared(
    pooled: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `/proc` path that names some other file (a `/proc` of another PID namespace would) is refused by its
    identity, and the bytes come through the pipe: the worker never prepares another file's bytes."""
    text = _accented(POOL_MIN_CHARS * 2)
    data = text.encode()
    impostor = os.memfd_create("impostor", os.MFD_CLOEXEC)
    os.write(impostor, data.upper())  # as long, other bytes
    shared_at = ingest_pool._where

    def elsewhere(fd: int, size: int) -> tuple[str, int, tuple[int, int]]:
        _, size, identity = shared_at(fd, size)
        return f"/proc/{os.getpid()}/fd/{impostor}", size, identity

    monkeypatch.setattr(ingest_pool, "_where", elsewhere)
    try:
        from_worker = await pooled.ingest.prepare(data, (), None, None, "out_" + "c" * 26)
    finally:
        os.close(impostor)
    assert isinstance(from_worker, Prepared)
    here = prepare_text(pooled.settings, load_counter(pooled.settings.encoding), text, None, None, "out_" + "c" * 26)
    assert (from_worker.index, from_worker.ingested.preview) == (here.index, here.ingested.preview)
    assert not pooled.ingest._maps


def vars_of(meta: object) -> dict[str, object]:
    return {name: getattr(meta, name) for name in meta.__slots__}  # type: ignore[attr-defined]


@on_shared_pool
async def test_small_outputs_stay_in_this_process(shared: Services) -> None:
    assert not shared.ingest.takes(POOL_MIN_CHARS - 1)
    assert shared.ingest.takes(POOL_MIN_CHARS)


@on_shared_pool
async def test_an_error_in_the_worker_is_raised_as_itself(shared: Services) -> None:
    not_utf8 = b"\xff" * (POOL_MIN_CHARS * 2)  # no encoding of a text gives these bytes: the worker's decode fails
    with pytest.raises(UnicodeDecodeError):
        await shared.ingest.prepare(not_utf8, (), None, None, None)
    text = _log(POOL_MIN_CHARS * 2)  # and the worker goes on
    assert isinstance(await shared.ingest.prepare(*encode_output(shared.settings, text), None, None, None), Prepared)


async def test_bytes_over_the_cap_are_refused_before_any_worker_sees_them(tmp_path: Path) -> None:
    services = build_services(
        Settings(store=str(tmp_path / "store"), ingest_workers=1, max_output_bytes=POOL_MIN_CHARS)
    )
    try:
        await _ready(services.ingest)
        text = "é" * (POOL_MIN_CHARS // 2 + 10)  # under the cap in chars, over it in bytes: refused after encoding
        with pytest.raises(TooLarge, match="over this server's cap"):
            await outputs.offload(services, outputs.SessionScope.named("s"), text)
        assert await services.store.list(outputs.SessionScope.named("s").key) == []
    finally:
        await services.aclose()


async def test_a_worker_killed_mid_call_loses_nothing(pooled: Services) -> None:
    pool = pooled.ingest
    (worker,) = pool._all  # one worker
    text = _json(8_000_000)
    scope = outputs.SessionScope.named("s")

    async def kill_soon() -> None:
        await anyio.sleep(0.05)
        os.kill(worker.process.pid, signal.SIGKILL)

    async with anyio.create_task_group() as tg:
        tg.start_soon(kill_soon)
        stored = await outputs.offload(pooled, scope, text)  # prepared in a thread after the worker died
    async with pooled.store.open(scope.key, stored.handle) as opened:
        assert opened.read_bytes(0, opened.meta.size) == text.encode()
    await _ready(pool)  # a new worker started
    assert worker not in pool._all
    assert await pool.prepare(*encode_output(pooled.settings, _log(POOL_MIN_CHARS * 2)), None, None, None) is not None


async def test_closing_while_workers_load_kills_them_at_once(tmp_path: Path) -> None:
    """A server stopped right after it started: its workers, still loading (importing, reading the vocabulary),
    would see their closed input only once loaded; they hold nothing yet, so they are killed at once rather than
    waited for, one after the other (a worker of `--workers` outlived its supervisor's grace period that way)."""
    pool = IngestPool(Settings(store=str(tmp_path / "store")), 2)
    pool.start()
    with anyio.fail_after(60):
        while len(pool._all) < 2:  # noqa: ASYNC110  (both processes spawned, neither has loaded yet)
            await anyio.sleep(0.001)
    processes = [worker.process for worker in pool._all]
    assert not any(worker.loaded for worker in pool._all)
    started = time.monotonic()
    await pool.aclose()
    assert time.monotonic() - started < 2.0  # not the 5 s grace, nor 5 s each
    assert [process.returncode for process in processes] == [-signal.SIGKILL] * 2  # not waited for (that ends 0)


async def test_a_big_ingest_does_not_hold_the_event_loop(pooled: Services) -> None:
    """While a big JSON output is stored, a 1 ms timer on the same event loop keeps firing. Prepared in a thread of
    this process instead, the whole-document parse alone holds the GIL (and so the loop) for about as long as
    `orjson.loads` takes (GC paused, as the ingest parses): the bound is half of that, measured here in the same
    run (and at least 100 ms, far above a busy machine's scheduling noise)."""
    text = _json(24_000_000)
    with gc_paused():  # as the ingest parses it
        started = time.perf_counter()
        orjson.loads(text)
        parse_s = time.perf_counter() - started
    bound = max(0.1, parse_s / 2)
    lags: list[float] = []
    done = anyio.Event()

    async def ticker() -> None:
        while not done.is_set():
            tick = time.perf_counter()
            await anyio.sleep(0.001)
            lags.append(time.perf_counter() - tick - 0.001)

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        await anyio.sleep(0.05)
        await outputs.offload(pooled, outputs.SessionScope.named("s"), text)
        done.set()
    assert lags and max(lags) < bound, (
        f"the loop stalled {max(lags) * 1000:.0f} ms (parse alone: {parse_s * 1000:.0f} ms)"
    )


async def test_a_call_the_closing_pool_cuts_short_is_no_death(
    pooled: Services, caplog: pytest.LogCaptureFixture
) -> None:
    """Closing the pool closes the pipes under any call still writing to them (a background passage-index build at
    shutdown): the call ends as if its worker had died, but nothing died, nothing is logged and nothing restarts."""
    pool = pooled.ingest
    (worker,) = pool._all
    await pool.aclose()
    with caplog.at_level(logging.WARNING, logger="mcp_offload.core.ingest_pool"):
        pool._died(worker, WorkerDied("write to closed file"), "this passage index is built in a thread")
    assert caplog.records == [] and pool._live == 0 and not pool._all
