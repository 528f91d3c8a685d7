"""The pool of jq workers: deadlines, concurrency, lifecycle (killed, warm, closed), routing to the worker that holds
an input, the retry without cached inputs, and a replacement libjq.
"""

from __future__ import annotations

import os
import signal
import time

import anyio
import pytest

from mcp_offload.errors import QueryError
from mcp_offload.retrieve.jq_pool import JqRunner
from mcp_offload.store.base import OutputMeta, StoredOutput
from mcp_offload.store.content_index import ContentIndex
from mcp_offload.store.handles import new_handle
from support.jq_runner import DOC, json_doc, make_output, running, wait_until, worker_pids


# -- runaway programs ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("program", ["def f: f; f", "last(range(1e10))", "[range(1e12)]", "[repeat(1)]"])
async def test_runaway_program_is_stopped_at_the_deadline(fast_runner: JqRunner, program: str) -> None:
    started = time.monotonic()
    with pytest.raises(QueryError, match=r"ran longer than 1.5 s|ran out of memory"):
        await fast_runner.run(make_output(b"{}"), program)
    # a bound against running on (each program never ends), not a measurement: 1 s of slack was 2.8 s on a loaded
    # machine filling memory for [range(1e12)]; the message above says the deadline or the memory limit stopped it
    assert time.monotonic() - started < 1.5 + 5.0
    assert (await fast_runner.run(make_output(b'{"a": 1}'), ".a")).text == "1"  # a fresh worker took over


async def test_other_queries_answer_while_a_runaway_one_runs(fast_runner: JqRunner) -> None:
    timings: dict[str, float] = {}
    started = time.monotonic()

    async def runaway() -> None:
        with pytest.raises(QueryError, match="ran longer"):
            await fast_runner.run(make_output(b"{}"), "def f: f; f")
        timings["runaway"] = time.monotonic() - started

    async with anyio.create_task_group() as tg:
        tg.start_soon(runaway)
        await anyio.sleep(0.2)  # the runaway program is running now
        for i in range(3):
            result = await fast_runner.run(make_output(b'{"i": %d}' % i), ".i")
            assert result.text == str(i)
        timings["quick"] = time.monotonic() - started
    assert timings["quick"] < timings["runaway"]  # answered while the runaway program was still running
    assert timings["runaway"] >= 1.5


# -- worker lifecycle ----------------------------------------------------------------------------------------------
async def test_worker_recovers_after_being_killed(runner: JqRunner) -> None:
    assert (await runner.run(make_output(b"[1, 2]"), "add")).text == "3"
    pids = worker_pids()
    assert len(pids) == 1
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    assert await wait_until(lambda: not any(running(pid) for pid in pids))  # a zombie has closed its socket
    assert (await runner.run(make_output(b"[1, 2]"), "add")).text == "3"
    assert worker_pids() and worker_pids().isdisjoint(pids)


async def test_pool_stays_warm_and_aclose_kills_everything() -> None:
    jq = JqRunner(workers=2)
    async with anyio.create_task_group() as tg:
        for i in range(4):
            tg.start_soon(jq.run, make_output(b"[%d]" % i), ".[0]")
    pids = worker_pids()
    assert 1 <= len(pids) <= 2
    assert (await jq.run(make_output(b"[7]"), ".[0]")).text == "7"
    assert worker_pids() <= pids  # reused, not respawned
    await jq.aclose()
    assert await wait_until(lambda: not worker_pids())
    with pytest.raises(QueryError, match="shutting down"):
        await jq.run(make_output(b"[7]"), ".[0]")


async def test_query_short_of_memory_next_to_cached_inputs_is_retried_without_them() -> None:
    """The cache counts against the memory cap; a query that needs the room gets it, and the cache is dropped."""
    jq = JqRunner(timeout_s=20, workers=1, memory_mb=200, cache_memory_mb=100)
    try:
        big = make_output(json_doc(5_000_000))  # ~60 MB parsed, cached
        assert (await jq.run(big, ".items | length")).text == "50000"
        assert (await jq.run(big, ".seed")).cached is True
        needs_160_mb = '("x" * 1000) * 160000 | length'
        with pytest.raises(QueryError, match=r"ran out of memory \(limit 200 MB\)"):  # as without a cache:
            await jq.run(big, needs_160_mb)  # 160 MB next to its own 60 MB input is over 200 MB either way
        assert (await jq.run(big, ".items | length")).cached is False
        assert (await jq.run(make_output(b"{}"), needs_160_mb)).text == "160000000"
        result = await jq.run(big, ".items | length")
        assert (result.text, result.cached) == ("50000", False)  # dropped to make room, parsed again
        with pytest.raises(QueryError, match=r"ran out of memory \(limit 200 MB\)"):  # too big in any case
            await jq.run(make_output(b"{}"), '("x" * 1000) * 400000 | length')
        assert (await jq.run(big, ".seed")).text == "0"
    finally:
        await jq.aclose()


async def test_killed_worker_takes_its_cache_along(runner: JqRunner) -> None:
    output = make_output(DOC)
    assert (await runner.run(output, ".nested.z")).cached is False
    assert (await runner.run(output, ".nested.z")).cached is True
    pids = worker_pids()
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    assert await wait_until(lambda: not any(running(pid) for pid in pids))
    result = await runner.run(output, ".items | map(.id)", compact=True)
    assert (result.text, result.cached) == ("[1,2,3]", False)
    assert (await runner.run(output, ".nested.z")).cached is True


async def test_timed_out_worker_takes_its_cache_along(fast_runner: JqRunner) -> None:
    output = make_output(b'{"a": [1, 2]}')
    assert (await fast_runner.run(output, ".a[0]")).cached is False
    with pytest.raises(QueryError, match="ran longer"):
        await fast_runner.run(output, "def f: f; f")
    result = await fast_runner.run(output, ".a[1]")
    assert (result.text, result.cached) == ("2", False)


async def test_queries_go_to_the_worker_holding_their_input() -> None:
    jq = JqRunner(workers=2)
    try:
        a, b = make_output(b'{"n": "a"}'), make_output(b'{"n": "b"}')
        async with anyio.create_task_group() as tg:  # two workers start, one parses a, the other b
            for output in (a, b):
                tg.start_soon(jq.run, output, ".n")
        assert len(worker_pids()) == 2
        results = [await jq.run(output, ".n") for output in (a, b, a, b, b, a)]
        assert [(r.text, r.cached) for r in results] == [(f'"{n}"', True) for n in "ababba"]
    finally:
        await jq.aclose()


SYSTEM_LIBJQ = next(
    (
        p
        for p in (
            "/usr/lib/x86_64-linux-gnu/libjq.so.1",
            "/usr/lib/aarch64-linux-gnu/libjq.so.1",
            "/usr/lib/libjq.so.1",
        )
        if os.path.exists(p)
    ),
    None,
)


@pytest.mark.skipif(
    SYSTEM_LIBJQ is None, reason="NO SYSTEM libjq.so.1 (apt-get install jq): the jq_library test did NOT run"
)
async def test_a_system_libjq_can_replace_the_bundled_one() -> None:
    doc = b'{"items": [{"id": 1, "name": "a\\u00e9"}, {"id": 2, "name": "b"}]}'
    meta = OutputMeta(
        handle=new_handle(),
        kind="json",
        size=len(doc),
        chars=len(doc),
        lines=1,
        tokens=0,
        tokens_estimated=False,
        created=0.0,
    )
    output = StoredOutput(meta=meta, index=ContentIndex.build(doc), data=doc)
    runner = JqRunner(workers=1, libjq=SYSTEM_LIBJQ)
    try:
        result = await runner.run(output, '[.items[] | .name] | join(",")', raw=True)
        assert result.text == "aé,b"
        r = await runner.run(output, "$ENV | length")
        assert r.text.strip() == "0"
    finally:
        await runner.aclose()
