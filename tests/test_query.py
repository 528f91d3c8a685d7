"""jq queries: CLI-identical output, and a sandbox that holds against runaway and nosy programs.

The yardstick is the real `jq` CLI (1.6 on the dev machine; jq.py bundles libjq 1.8.2). The programs compared
here print the same under both versions; 1.7+ differs from 1.6 in number literals (it keeps `1.0`, `2.50`,
`1E+3` and big integers as written), which is why the documents below avoid such literals.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from mcp_offload.errors import QueryError
from mcp_offload.index import ContentIndex
from mcp_offload.retrieve.query import JqResult, JqRunner, find_directive
from mcp_offload.store.base import Kind, OutputMeta, StoredOutput
from mcp_offload.store.fs import FilesystemStore
from mcp_offload.store.handles import new_handle, scope_key

JQ = shutil.which("jq")
needs_jq_cli = pytest.mark.skipif(JQ is None, reason="the jq CLI is not installed (apt-get install jq): no yardstick")

DOC = (
    '{"name": "Zoë ☃ 😀 \\u00e9", "tags": ["b", "a", "é", "tab\\tq\\"uote", "\\u0000x", ""],'
    ' "nums": [3, 1.5, -2, 0.25, 12345678901, 0], "nested": {"z": 1, "a": {"deep": [{}, [], null, true, false]}},'
    ' "items": [{"id": 1, "price": 9.5, "ok": true}, {"id": 2, "price": 20, "ok": false}, {"id": 3, "price": 0.5}]}'
).encode()

PROGRAMS = [
    ".",
    ".name",
    ".tags",
    ".tags[]",
    ".nested | keys, to_entries",
    "[.items[] | select(.price > 1) | {id, price}]",
    ".nums | add, (map(. * 3)), sort, [min, max]",
    ".name | length, utf8bytelength, explode",
    '.tags | @csv, @tsv, join("-")',
    ".name | @base64, @uri, ascii_downcase",
    '[paths] | length, (.[0] | tostring), "s\\(.[1])"',
    ".items | group_by(.ok) | map(length)",
    "empty",
]
JSONL = b'{"a": 1, "s": "x"}\n{"a": 2, "s": "\xc3\xa9"}\n{"a": 3, "s": "z"}\n'
JSONL_PROGRAMS = [
    ".a",
    "[., inputs] | length",
    "[., (try input catch null)] | map(.a)",
    "first(inputs).a",
    "select(.a >= 2) | .s",
]


def make_output(data: bytes, kind: Kind = "json") -> StoredOutput:
    meta = OutputMeta(
        handle=new_handle(),
        kind=kind,
        size=len(data),
        chars=len(data.decode("utf-8", "surrogatepass")),
        lines=data.count(b"\n") + (0 if data.endswith(b"\n") else 1),
        tokens=1,
        tokens_estimated=True,
        created=time.time(),
    )
    return StoredOutput(meta, ContentIndex.build(data), data, path=None)


def jq_cli(program: str, path: Path, *flags: str) -> str:
    assert JQ is not None
    done = subprocess.run([JQ, *flags, program, str(path)], capture_output=True, check=True)
    return done.stdout.decode("utf-8")


def as_cli(result: JqResult) -> str:
    """Our text as the CLI prints it: each result followed by a newline."""
    return result.text + "\n" if result.results else ""


def worker_pids() -> set[int]:
    """This process's jq workers, found the way an outsider would: /proc."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == os.getpid() and fields[0] != "Z" and b"jq_worker.py" in cmdline:
            found.add(int(entry.name))
    return found


async def wait_until(condition: Callable[[], bool], within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if condition():
            return True
        await anyio.sleep(0.02)
    return condition()


@pytest.fixture
async def runner() -> AsyncIterator[JqRunner]:
    jq = JqRunner(timeout_s=10)
    yield jq
    await jq.aclose()


@pytest.fixture
async def fast_runner() -> AsyncIterator[JqRunner]:
    jq = JqRunner(timeout_s=1.5, max_output_chars=5_000)
    yield jq
    await jq.aclose()


OpenStored = Callable[[bytes, Kind], AsyncIterator[StoredOutput]]


@pytest.fixture
async def stored(tmp_path: Path) -> AsyncIterator[OpenStored]:
    """Open outputs from a real FilesystemStore: the worker then maps the stored file itself."""
    store = FilesystemStore(tmp_path / "store", fsync=False)
    scope = scope_key("test-session")

    def open_stored(data: bytes, kind: Kind = "json") -> AsyncIterator[StoredOutput]:
        async def gen() -> AsyncIterator[StoredOutput]:
            output = make_output(data, kind)
            await store.put(scope, output.meta, output.index, data)
            async with store.open(scope, output.meta.handle) as opened:
                assert opened.path is not None
                yield opened

        return gen()

    yield open_stored
    await store.aclose()


# -- same output as the jq CLI -------------------------------------------------------------------------------------
@needs_jq_cli
@pytest.mark.parametrize("flags", [(), ("-c",), ("-r",)], ids=["pretty", "compact", "raw"])
async def test_output_equals_jq_cli(
    runner: JqRunner, stored: OpenStored, tmp_path: Path, flags: tuple[str, ...]
) -> None:
    path = tmp_path / "doc.json"
    path.write_bytes(DOC)
    from_bytes = make_output(DOC)
    async for from_file in stored(DOC, "json"):
        for program in PROGRAMS:
            expected = jq_cli(program, path, *flags)
            for output in (from_file, from_bytes):
                result = await runner.run(output, program, compact="-c" in flags, raw="-r" in flags)
                assert as_cli(result) == expected, (program, flags, output.path)
                assert result.truncated is False
                if flags == ("-c",):  # one line per result
                    assert result.results == expected.count("\n")


@needs_jq_cli
async def test_json_lines_is_a_stream_of_inputs(runner: JqRunner, stored: OpenStored, tmp_path: Path) -> None:
    path = tmp_path / "doc.jsonl"
    path.write_bytes(JSONL)
    async for output in stored(JSONL, "jsonl"):
        for program in JSONL_PROGRAMS:
            result = await runner.run(output, program, compact=True)
            assert as_cli(result) == jq_cli(program, path, "-c"), program
    assert (await runner.run(make_output(JSONL, "jsonl"), "[., inputs] | map(.a)", compact=True)).text == "[1,2,3]"


async def test_pretty_compact_raw_shapes(runner: JqRunner) -> None:
    output = make_output(b'{"a": [1, {"b": "x\\ny"}], "e": {}, "l": []}')
    pretty = '{\n  "a": [\n    1,\n    {\n      "b": "x\\ny"\n    }\n  ],\n  "e": {},\n  "l": []\n}'
    assert (await runner.run(output, ".")).text == pretty
    assert (await runner.run(output, ".", compact=True)).text == '{"a":[1,{"b":"x\\ny"}],"e":{},"l":[]}'
    raw = await runner.run(output, '.a[1].b, .a, "é"', raw=True)
    assert raw.text == 'x\ny\n[\n  1,\n  {\n    "b": "x\\ny"\n  }\n]\né'
    assert raw.results == 3
    assert (await runner.run(output, ".a[]", raw=True, compact=True)).text == '1\n{"b":"x\\ny"}'


# -- errors come back as jq's own messages -------------------------------------------------------------------------
async def test_syntax_error_is_jqs_message(runner: JqRunner) -> None:
    with pytest.raises(QueryError) as caught:
        await runner.run(make_output(DOC), ".items | | .id")
    message = str(caught.value)
    assert message.startswith("jq: error: syntax error, unexpected '|'")
    assert "line 1, column 10" in message
    assert message.endswith("jq: 1 compile error")
    with pytest.raises(QueryError, match=r"nosuchfn/0 is not defined"):
        await runner.run(make_output(DOC), ".items | nosuchfn")


async def test_runtime_error_is_jqs_message(runner: JqRunner) -> None:
    with pytest.raises(QueryError) as caught:
        await runner.run(make_output(DOC), ".tags.x")
    assert str(caught.value) == 'jq: error: Cannot index array with string ("x")'
    with pytest.raises(QueryError) as caught:
        await runner.run(make_output(DOC), 'error({"code": 7})')
    assert str(caught.value) == 'jq: error (not a string): {"code":7}'
    # the worker survives its program's errors
    assert (await runner.run(make_output(DOC), ".nested.z")).text == "1"


async def test_halt_input_debug_stderr_and_loc(runner: JqRunner, capfd: pytest.CaptureFixture[str]) -> None:
    output = make_output(DOC)
    assert (await runner.run(output, '.nested.z | debug, stderr, debug("msg")', compact=True)).text == "1\n1\n1"
    assert (await runner.run(output, "1, halt, 2")).text == "1"
    assert (await runner.run(output, "$__loc__", compact=True)).text == '{"file":"<top-level>","line":1}'
    with pytest.raises(QueryError, match=r"halt_error, exit status 5: bye"):
        await runner.run(output, '"bye\\n" | halt_error')
    with pytest.raises(QueryError, match=r"break.*read past the last JSON value"):
        await runner.run(output, "input")
    assert (await runner.run(output, "[inputs]", compact=True)).text == "[]"
    captured = capfd.readouterr()
    assert captured.out == ""  # stdout is the MCP wire
    assert "DEBUG" not in captured.err and "bye" not in captured.err


# -- runaway programs ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("program", ["def f: f; f", "last(range(1e10))", "[range(1e12)]", "[repeat(1)]"])
async def test_runaway_program_is_stopped_at_the_deadline(fast_runner: JqRunner, program: str) -> None:
    started = time.monotonic()
    with pytest.raises(QueryError, match=r"ran longer than 1.5 s|ran out of memory"):
        await fast_runner.run(make_output(b"{}"), program)
    assert time.monotonic() - started < 1.5 + 1.0
    assert (await fast_runner.run(make_output(b'{"a": 1}'), ".a")).text == "1"  # a fresh worker took over


async def test_endless_output_is_cut_at_the_cap(fast_runner: JqRunner) -> None:
    started = time.monotonic()
    result = await fast_runner.run(make_output(b'{"a": "\xc3\xa9"}'), "repeat(.)", compact=True)
    assert time.monotonic() - started < 1.5  # cut at the cap, not stopped at the deadline
    assert result.truncated is True
    assert len(result.text) == 5_000
    assert result.text.startswith('{"a":"é"}\n{"a":"é"}\n')
    assert result.results == result.text.count("\n") + 1


async def test_one_huge_result_is_cut_too(fast_runner: JqRunner) -> None:
    result = await fast_runner.run(make_output(b"null"), '"é" * 100000', raw=True)
    assert result.truncated is True
    assert result.text == "é" * 5_000
    assert result.results == 1
    exact = await fast_runner.run(make_output(b"null"), '"x" * 5000', raw=True)
    assert (exact.text, exact.truncated) == ("x" * 5_000, False)


async def test_memory_bomb_fails_cleanly() -> None:
    jq = JqRunner(timeout_s=20, memory_mb=128)
    try:
        started = time.monotonic()
        with pytest.raises(QueryError, match=r"ran out of memory \(limit 128 MB\)"):
            await jq.run(make_output(b"{}"), '"x" * 1e9 | length')
        assert time.monotonic() - started < 10
        assert (await jq.run(make_output(b'{"a": 2}'), ".a")).text == "2"
    finally:
        await jq.aclose()


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


# -- the sandbox ---------------------------------------------------------------------------------------------------
async def test_no_environment_leaks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_OFFLOAD_TEST_SECRET", "s3cr3t-value")
    jq = JqRunner()  # workers start after the secret is set
    try:
        result = await jq.run(make_output(b"{}"), "$ENV, env, ($ENV | length), $ENV.HOME, env.PATH", compact=True)
        assert result.text == "{}\n{}\n0\nnull\nnull"
        assert "s3cr3t" not in result.text
    finally:
        await jq.aclose()


async def test_no_file_names_or_module_paths(runner: JqRunner, stored: OpenStored) -> None:
    async for output in stored(b"[1]", "json"):
        result = await runner.run(output, "input_filename, get_search_list, input_line_number", compact=True)
        assert result.text == "null\n[]\n0"
    assert (await runner.run(make_output(b"[1]"), "input_filename")).text == "null"
    with pytest.raises(QueryError, match="module not found"):
        await runner.run(make_output(b"[1]"), '"passwd" | modulemeta')


@pytest.mark.parametrize(
    "program",
    [
        'import "a" as a; .',
        'include "a"; .',
        'import "passwd" as $p {search: "/etc"}; .',
        '# a comment\ninclude "x";\n.',
        '"\\(import "a" as a; 1)"',
        "[import]",
        'def f: 1; import "a" as a; f',
    ],
)
async def test_import_and_include_are_rejected(runner: JqRunner, program: str) -> None:
    with pytest.raises(QueryError, match="directives are not allowed"):
        await runner.run(make_output(b"{}"), program)


@pytest.mark.parametrize(
    ("program", "expected"),
    [
        ('"import this"', '"import this"'),
        ('"\\("include")d"', '"included"'),
        (".import", "null"),
        ("{import: 1, include: 2}", '{"import":1,"include":2}'),
        ('# import "a" as a;\n.', "{}"),
        (". as {$import} | $import", "null"),
        ('"a\\\\" | ltrimstr("import")', '"a\\\\"'),
    ],
)
async def test_the_words_are_fine_elsewhere(runner: JqRunner, program: str, expected: str) -> None:
    assert (await runner.run(make_output(b"{}"), program, compact=True)).text == expected


def test_find_directive_table() -> None:
    assert find_directive('import "a" as a; .') == "import"
    assert find_directive('  include "a"; .') == "include"
    assert find_directive('"import" | .include | {import} | $__loc__') is None
    assert find_directive('# comment \\\nimport "a" as a; .') is None  # a backslash continues the comment
    assert find_directive('# comment \\\\\nimport "a" as a; .') == "import"  # ... unless it is escaped
    assert find_directive('"\\\\" | import') == "import"
    assert find_directive('"\\"import"') is None
    assert find_directive("@base64 | importx | x::import") is None


async def test_program_checks(runner: JqRunner) -> None:
    output = make_output(b"{}")
    with pytest.raises(QueryError, match="10001 characters long; the limit is 10000"):
        await runner.run(output, "." * 10_001)
    with pytest.raises(QueryError, match="NUL"):
        await runner.run(output, ".a\x00")
    with pytest.raises(QueryError, match="must be a string"):
        await runner.run(output, 42)  # type: ignore[arg-type]
    with pytest.raises(QueryError, match="surrogate"):
        await runner.run(output, '"\ud800"')


@pytest.mark.parametrize("kind", ["text", "blob"])
async def test_non_json_outputs_are_refused(runner: JqRunner, kind: Kind) -> None:
    with pytest.raises(QueryError) as caught:
        await runner.run(make_output(b"hello\n", kind), ".")
    assert "not JSON" in str(caught.value)
    assert "search_large_output" in str(caught.value) and "read_large_output" in str(caught.value)


async def test_invalid_stored_json_is_reported(runner: JqRunner) -> None:
    with pytest.raises(QueryError, match=r"could not parse output \S+ as JSON"):
        await runner.run(make_output(b'{"a": 1', "json"), ".a")
    with pytest.raises(QueryError, match="Unfinished JSON term"):  # met by `inputs`, as in the CLI
        await runner.run(make_output(b'{"a": 1} {"b": ', "jsonl"), ".a")


# -- worker lifecycle ----------------------------------------------------------------------------------------------
async def test_worker_recovers_after_being_killed(runner: JqRunner) -> None:
    assert (await runner.run(make_output(b"[1, 2]"), "add")).text == "3"
    pids = worker_pids()
    assert len(pids) == 1
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    assert await wait_until(lambda: not any(_running(pid) for pid in pids))  # a zombie has closed its socket
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


def test_workers_die_with_their_parent() -> None:
    """A server killed mid-query (no cleanup at all) leaves no worker behind, busy or idle."""
    script = textwrap.dedent(
        """
        import os, time, anyio
        from pathlib import Path
        from mcp_offload.index import ContentIndex
        from mcp_offload.retrieve.query import JqRunner
        from mcp_offload.store.base import OutputMeta, StoredOutput

        def worker_pids():
            return [p.name for p in Path("/proc").iterdir() if p.name.isdigit() and _mine(p)]

        def _mine(p):
            try:
                ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
                return ppid == os.getpid() and b"jq_worker.py" in (p / "cmdline").read_bytes()
            except OSError:
                return False

        async def main():
            meta = OutputMeta("out_" + "a" * 26, "json", 2, 2, 1, 1, True, time.time())
            output = StoredOutput(meta, ContentIndex.build(b"{}"), b"{}")
            jq = JqRunner(timeout_s=60, workers=2)
            async with anyio.create_task_group() as tg:
                tg.start_soon(jq.run, output, "def f: f; f")  # one busy worker ...
                await anyio.sleep(0.3)
                await jq.run(output, ".")  # ... and one idle
                os.write(1, " ".join(map(str, worker_pids())).encode())
                os._exit(0)

        anyio.run(main)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=30, check=False)
    pids = [int(pid) for pid in done.stdout.split()]
    assert len(pids) == 2, done.stderr.decode()[-2000:]
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_running(pid) for pid in pids):
        time.sleep(0.05)
    assert not any(_running(pid) for pid in pids)


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def test_worker_cannot_read_files_even_past_the_directive_check(tmp_path: Path) -> None:
    """Defense in depth: a request that skips `check_program` still cannot load a file (Landlock)."""
    from mcp_offload.retrieve import query

    (tmp_path / "secret.json").write_text('{"token": "s3cr3t"}')
    program = f'import "secret" as $s {{search: "{tmp_path}"}}; $s'
    worker = await query._Worker.start(query._libjq_path())
    try:
        if not worker.landlock:
            pytest.skip("Landlock is not available on this kernel: file access is blocked by the other layers only")
        header = {"program": program, "compact": True, "raw": False, "max_chars": 1000, "memory_bytes": 1 << 30}
        reply = await worker.request({**header, "size": 2}, None, b"{}", 1 << 20)
        assert reply["ok"] is False and reply["error"] == "compile"
        assert "s3cr3t" not in str(reply)
    finally:
        await worker.discard()


# -- the parsed-input cache ----------------------------------------------------------------------------------------
def json_doc(approx_bytes: int, seed: int = 0) -> bytes:
    """A JSON object whose `items` array makes it about `approx_bytes` long (~100 bytes per item)."""
    count = max(1, approx_bytes // 100)
    items = ",".join(
        f'{{"id": {i}, "name": "item-{i}-{seed}", "price": {i % 1000}.25, "ok": {str((i + seed) % 3 > 0).lower()}, '
        f'"tags": ["a", "b{i % 7}"]}}'
        for i in range(count)
    )
    return f'{{"seed": {seed}, "items": [{items}]}}'.encode()


def same_handle(output: StoredOutput, data: bytes, *, created: float | None = None) -> StoredOutput:
    """Another output under the same handle (which a store never produces): the cache must still tell them apart."""
    meta = replace(output.meta, size=len(data), created=output.meta.created if created is None else created)
    return StoredOutput(meta, ContentIndex.build(data), data, path=None)


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
    assert await wait_until(lambda: not any(_running(pid) for pid in pids))
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
