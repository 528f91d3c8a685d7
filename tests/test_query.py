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
