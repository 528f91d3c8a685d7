"""Vetting a jq program before it reaches a worker: directives, size, characters, and the input's kind."""

from __future__ import annotations

import pytest

from mcp_offload.errors import QueryError
from mcp_offload.retrieve.jq_pool import JqRunner
from mcp_offload.retrieve.jq_program import find_directive
from mcp_offload.store.base import Kind
from support.jq_runner import make_output


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
