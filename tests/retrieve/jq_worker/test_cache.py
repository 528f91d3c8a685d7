"""The parsed-input cache in the workers: what it saves, that runs cannot change it, what it serves, its bounds."""

from __future__ import annotations

import ctypes
import time

import pytest

from mcp_offload.errors import QueryError
from mcp_offload.retrieve.jq_pool import JqRunner
from mcp_offload.retrieve.jq_process import libjq_path
from mcp_offload.retrieve.jq_worker.cache import CachedInput, CacheLimits
from mcp_offload.retrieve.jq_worker.engine import Engine
from mcp_offload.retrieve.jq_worker.libjq import LibJq
from mcp_offload.retrieve.jq_worker.main import after_reply
from support.jq_runner import DOC, JSONL, OpenStored, json_doc, make_output, same_handle


async def test_second_query_on_an_output_skips_the_parse(stored: OpenStored) -> None:
    data = json_doc(5_000_000)
    programs = [".items | length", ".items[10].name", "[.items[] | select(.id == 4321)] | .[0].tags", ".seed"]
    cached_runner = JqRunner(timeout_s=30, workers=1)
    plain_runner = JqRunner(timeout_s=30, workers=1, cache_inputs=0)
    try:
        async for output in stored(data, "json"):
            started = time.perf_counter()
            first = await cached_runner.run(output, programs[0], compact=True)
            first_s = time.perf_counter() - started
            assert first.cached is False
            again_s = []
            for program in programs:
                started = time.perf_counter()
                result = await cached_runner.run(output, program, compact=True)
                again_s.append(time.perf_counter() - started)
                assert result.cached is True
                uncached = await plain_runner.run(output, program, compact=True)
                assert uncached.cached is False
                assert (result.text, result.results, result.truncated) == (
                    uncached.text,
                    uncached.results,
                    uncached.truncated,
                ), program
            assert first.text == "50000"
            assert min(again_s) < first_s / 3, (first_s, again_s)
    finally:
        await cached_runner.aclose()
        await plain_runner.aclose()


async def test_a_run_cannot_change_the_cached_value(runner: JqRunner) -> None:
    output = make_output(DOC)
    original = (await runner.run(output, ".", compact=True)).text
    mutations = [
        ".a = 1",
        ".items[0].id |= . + 100",
        "del(.nested)",
        '.tags += ["new"]',
        ".name |= ascii_upcase",
        "to_entries | map(.value = null) | from_entries",
        'setpath(["nums", 0]; 99)',
        ".items |= sort_by(-.id)",
        '.. |= (if type == "number" then 0 else . end)',
        "reduce range(5) as $i (.; .nums += [$i])",
        '.nested.a.deep[0].x = "y" | .nested.a.deep[1] += [1]',
        'first(.tags[] |= "x"), (.items[] |= {id})',
    ]
    for program in mutations:
        changed = await runner.run(output, program, compact=True)
        assert changed.cached is True and changed.text != original, program
        after = await runner.run(output, ".", compact=True)
        assert after.cached is True
        assert after.text == original, program
    assert (await runner.run(output, ".a = 1 | .a")).text == "1"
    assert (await runner.run(output, ".a")).text == "null"

    lines = make_output(JSONL, "jsonl")
    assert (await runner.run(lines, ".a = 9 | .a", compact=True)).text == "9\n9\n9"
    again = await runner.run(lines, ".a", compact=True)
    assert (again.text, again.cached) == ("1\n2\n3", True)


async def test_programs_reading_the_stream_get_it(runner: JqRunner) -> None:
    """`input`/`inputs` read the rest of a JSON Lines output, also when its records are cached."""
    lines = make_output(JSONL, "jsonl")
    assert (await runner.run(lines, ".a", compact=True)).text == "1\n2\n3"
    for program, expected in [
        ("[., inputs] | map(.a)", "[1,2,3]"),
        ("[., (try input catch null)] | map(.a)", "[1,2]\n[3,null]"),
        ("input_line_number", "0\n0\n0"),  # jq counts lines only in files it reads itself
    ]:
        result = await runner.run(lines, program, compact=True)
        assert (result.text, result.cached) == (expected, False), program
    assert (await runner.run(lines, "select(.a >= 2) | .s", compact=True)).cached is True

    document = make_output(DOC)
    assert (await runner.run(document, ".nested.z")).cached is False
    empty = await runner.run(document, "[inputs], [.nested.z, first(inputs)?]", compact=True)
    assert (empty.text, empty.cached) == ("[]\n[1]", True)  # a single value: nothing left to read, as before
    with pytest.raises(QueryError, match=r"break.*read past the last JSON value"):
        await runner.run(document, "input")
    line = await runner.run(document, "input_line_number, input_filename", compact=True)
    assert (line.text, line.cached) == ("0\nnull", False)


async def test_cache_is_evicted_by_count() -> None:
    jq = JqRunner(workers=1, cache_inputs=2)
    try:
        a, b, c = (make_output(b'{"n": %d}' % i) for i in range(3))
        for output in (a, b, c):
            assert (await jq.run(output, ".n")).cached is False
        assert [(await jq.run(output, ".n")).cached for output in (c, b, a)] == [True, True, False]
        assert [(await jq.run(output, ".n")).text for output in (a, b, c)] == ["0", "1", "2"]
    finally:
        await jq.aclose()


async def test_cache_is_evicted_by_input_bytes() -> None:
    jq = JqRunner(workers=1, cache_input_mb=100_000 / 2**20)
    try:
        a, b, c = (make_output(json_doc(40_000, seed)) for seed in range(3))
        for output in (a, b, c):
            assert (await jq.run(output, ".seed")).cached is False
        assert [(await jq.run(output, ".seed")).cached for output in (c, b, a)] == [True, True, False]
        too_big = make_output(json_doc(120_000, 9))  # more than the whole cache: never kept, evicts nothing
        assert [(await jq.run(too_big, ".seed")).cached for _ in range(2)] == [False, False]
        assert [(await jq.run(output, ".seed")).text for output in (b, a)] == ["1", "0"]
        assert [(await jq.run(output, ".seed")).cached for output in (b, a)] == [True, True]
    finally:
        await jq.aclose()


async def test_cache_is_bounded_by_parsed_size() -> None:
    """Parsed JSON takes several times its text: the cache counts what the parsed values hold."""
    jq = JqRunner(workers=1, cache_memory_mb=1)
    try:
        document = make_output(json_doc(200_000))  # ~2 MB parsed: too big to keep
        assert [(await jq.run(document, ".items | length")).cached for _ in range(2)] == [False, False]
        lines = make_output(b"".join(b'{"i": %d, "s": "%s"}\n' % (i, b"x" * 50) for i in range(4000)), "jsonl")
        results = [await jq.run(lines, "select(.i == 3999) | .i") for _ in range(2)]  # streamed: never parsed whole
        assert [(r.text, r.cached) for r in results] == [("3999", False), ("3999", False)]
        a, b, c = (make_output(json_doc(40_000, seed)) for seed in range(3))  # ~0.45 MB parsed each: two fit
        for output in (a, b, c):
            assert (await jq.run(output, ".seed")).cached is False
        assert [(await jq.run(output, ".seed")).cached for output in (c, b, a)] == [True, True, False]
    finally:
        await jq.aclose()


async def test_cache_key_includes_size_and_creation_time(runner: JqRunner) -> None:
    first = make_output(b'{"v": "first"}')
    assert (await runner.run(first, ".v")).text == '"first"'
    assert (await runner.run(first, ".v")).cached is True
    longer = same_handle(first, b'{"v": "longer one"}')
    assert (await runner.run(longer, ".v")).text == '"longer one"'
    later = same_handle(first, b'{"v": "other"}', created=first.meta.created + 1)  # same size, same handle
    result = await runner.run(later, ".v")
    assert (result.text, result.cached) == ('"other"', False)
    assert (await runner.run(first, ".v")).text == '"first"'


async def test_cache_can_be_turned_off() -> None:
    jq = JqRunner(workers=1, cache_inputs=0)
    try:
        output = make_output(DOC)
        assert [(await jq.run(output, ".nested.z")).cached for _ in range(2)] == [False, False]
    finally:
        await jq.aclose()


def test_a_parsed_input_too_big_to_keep_is_freed_after_the_reply() -> None:
    """Freeing a parsed document takes about as long as the program ran on it (~1 s per 100 MB): the worker answers
    first (`main.after_reply` runs once the reply is sent). In this process, with the real libjq: `put` keeps the
    value alive, `after_reply` frees it (the heap shrinks by most of its cost)."""
    engine = Engine(LibJq(libjq_path()))
    document = json_doc(2_000_000)
    buffer = ctypes.create_string_buffer(document, len(document))
    before = engine.meter.used()
    if before is None:
        pytest.skip("no mallinfo2 (not glibc): the heap cannot be measured")
    parsed = engine.parse_all(ctypes.addressof(buffer), len(document))
    assert parsed is not None
    parsed_bytes = (engine.meter.used() or 0) - before
    assert parsed_bytes > 4 * len(document)
    entry = CachedInput("big", len(document), parsed[1], parsed[0], parsed_bytes)
    limits = CacheLimits(entries=4, input_bytes=len(document), memory_bytes=parsed_bytes // 2)  # too big to keep
    assert engine.inputs.put(entry, limits) == parsed_bytes
    assert engine.inputs.listing() == []  # not kept, and the server is told so with the reply
    assert (engine.meter.used() or 0) - before > parsed_bytes * 0.9  # still alive while the reply goes out
    after_reply(engine)
    assert engine.inputs.unkept == [] and (engine.meter.used() or 0) - before < parsed_bytes * 0.1
