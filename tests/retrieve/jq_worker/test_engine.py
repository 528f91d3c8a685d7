"""The worker's engine: CLI-identical output, jq's own error messages, and the output cap.

The yardstick is the real `jq` CLI (1.6 on the dev machine; jq.py bundles libjq 1.8.2). The programs compared
here print the same under both versions; 1.7+ differs from 1.6 in number literals (it keeps `1.0`, `2.50`,
`1E+3` and big integers as written), which is why the documents below avoid such literals.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mcp_offload.errors import QueryError
from mcp_offload.retrieve.jq_pool import JqRunner
from support.jq_runner import DOC, JSONL, OpenStored, as_cli, jq_cli, make_output, needs_jq_cli

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


JSONL_PROGRAMS = [
    ".a",
    "[., inputs] | length",
    "[., (try input catch null)] | map(.a)",
    "first(inputs).a",
    "select(.a >= 2) | .s",
]


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


async def test_invalid_stored_json_is_reported(runner: JqRunner) -> None:
    with pytest.raises(QueryError, match=r"could not parse output \S+ as JSON"):
        await runner.run(make_output(b'{"a": 1', "json"), ".a")
    with pytest.raises(QueryError, match="Unfinished JSON term"):  # met by `inputs`, as in the CLI
        await runner.run(make_output(b'{"a": 1} {"b": ', "jsonl"), ".a")
