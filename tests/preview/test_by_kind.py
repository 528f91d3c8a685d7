"""Previews by kind on real outputs (tests/support/preview_corpus.py): detected from content, within the budget,
with facts checked against an independent reading of the output, and every ready call run through the real
retrieval API."""

from __future__ import annotations

import ast
import re
import typing
from typing import Any

import pytest

from mcp_offload.core import outputs
from mcp_offload.core.ingest import FRAME_TOKENS
from mcp_offload.core.services import Services
from support.preview_corpus import KINDS, corpus_text

# One worker builds the corpus (a redis-server, a uvicorn app, git) and runs every test of this module
pytestmark = pytest.mark.xdist_group("preview-corpus")


async def run_calls(services: Services, scope: outputs.SessionScope, handle: str, out: Any) -> list[str]:
    """Run every call the preview shows; each must answer with something. Returns what each returned."""
    calls = out.shape["calls"]
    assert calls, "a preview by kind names at least one ready call"
    answers = []
    for call in calls:
        args = {k: v for k, v in call.items() if k != "tool"}
        if call["tool"] == "read_large_output":
            assert 1 <= args["start_line"] <= args["end_line"] <= out.lines, call
            read = await outputs.read(services, scope, handle, **args)
            assert read.text.strip(), call
            assert read.start == args["start_line"]
            answers.append(read.text)
        elif call["tool"] == "query_large_output":
            got = await outputs.query(services, scope, handle, args["query"])
            assert got.results >= 1 and not got.truncated, call
            answers.append(got.result)
        else:
            found = await outputs.search(services, scope, args.pop("pattern"), handle=handle, **args)
            assert found.total_matches >= 1, call
            answers.append("\n".join(m.text for m in found.matches))
    return answers


@pytest.mark.parametrize(("kind", "name"), KINDS, ids=[name for _, name in KINDS])
async def test_real_output_gets_its_kind_of_preview_and_every_call_works(
    services: Services, kind: str, name: str
) -> None:
    text = corpus_text(name)
    scope = outputs.SessionScope.new()
    out = await outputs.offload(services, scope, text, name=name)
    assert out.kind == "text"
    assert out.shape["type"] == kind, out.preview
    budget = services.settings.preview_tokens - FRAME_TOKENS
    assert services.tokens.count(out.preview) <= budget
    for call in out.shape["calls"]:  # what the structured summary lists is what the text shows
        shown = ", ".join(f"{k}={v!r}" for k, v in call.items() if k != "tool")
        assert call["tool"] in out.preview, shown
    await run_calls(services, scope, out.handle, out)


async def _offloaded(services: Services, name: str) -> tuple[outputs.SessionScope, Any]:
    scope = outputs.SessionScope.new()
    return scope, await outputs.offload(services, scope, corpus_text(name), name=name)


async def test_uvicorn_log_errors_templates_and_levels_match_the_log(services: Services) -> None:
    scope, out = await _offloaded(services, "uvicorn log")
    lines = corpus_text("uvicorn log").split("\n")
    errors = [i + 1 for i, line in enumerate(lines) if line.startswith("ERROR:")]
    assert len(errors) == 2
    assert out.shape["first_error"]["line"] == errors[0]
    assert out.shape["levels"]["ERROR"] == 2
    assert out.shape["levels"]["INFO"] == sum(1 for line in lines if line.startswith("INFO:"))
    assert (
        out.shape["http_status"] == {"2xx": 105, "4xx": 14, "5xx": 2} or sum(out.shape["http_status"].values()) == 121
    )
    count, first_line = next((n, line) for n, line, text in out.shape["templates"] if "RuntimeError: payment" in text)
    assert count == 2
    assert lines[first_line - 1].startswith("RuntimeError: payment service timed out")
    answers = await run_calls(services, scope, out.handle, out)
    assert "Exception in ASGI application" in answers[0]  # the first error and its traceback
    assert "RuntimeError" in answers[0]


async def test_redis_log_levels_and_time_span(services: Services) -> None:
    _, out = await _offloaded(services, "redis-server log")
    lines = [line for line in corpus_text("redis-server log").split("\n") if line]
    marks = {".": "DEBUG", "-": "VERBOSE", "*": "NOTICE", "#": "WARNING"}
    expected: dict[str, int] = {}
    for line in lines:
        mark = re.match(r"\d+:[XCSM] .{24} (.) ", line)
        if mark:
            expected[marks[mark.group(1)]] = expected.get(marks[mark.group(1)], 0) + 1
    assert out.shape["levels"] == expected
    assert out.shape["time_span"][0] in lines[0] and out.shape["time_span"][1] in lines[-1]
    accepted = next(n for n, _, text in out.shape["templates"] if "Accepted connection" in text)
    assert accepted == sum(1 for line in lines if "Accepted connection" in line)


def _diff_oracle(text: str) -> dict[str, tuple[int, int]]:
    """+/- per file path, counted line by line (the preview counts with str.count)."""
    counts: dict[str, list[int]] = {}
    path, in_header = "", False
    for line in text.split("\n"):
        if line.startswith("diff --git "):
            path, in_header = line.split(" b/", 1)[1], True
            counts.setdefault(path, [0, 0])
        elif line.startswith("commit ") and re.match(r"commit [0-9a-f]{40}", line):
            in_header = True
        elif line.startswith("@@ "):
            in_header = False
        elif not in_header and path and line.startswith("+"):
            counts[path][0] += 1
        elif not in_header and path and line.startswith("-"):
            counts[path][1] += 1
    return {p: (a, r) for p, (a, r) in counts.items()}


async def test_git_diff_files_and_counts_match_a_line_by_line_count(services: Services) -> None:
    scope, out = await _offloaded(services, "git diff")
    oracle = _diff_oracle(corpus_text("git diff"))
    assert out.shape["files_changed"] == len(oracle)
    assert (out.shape["added"], out.shape["removed"]) == (
        sum(a for a, _ in oracle.values()),
        sum(r for _, r in oracle.values()),
    )
    lines = corpus_text("git diff").split("\n")
    for path, added, removed, first, last in out.shape["files"]:
        assert (added, removed) == oracle[path]
        assert lines[first - 1].startswith("diff --git ") and path in lines[first - 1]
        assert last == len(lines) - 1 or lines[last].startswith("diff --git ")
    await run_calls(services, scope, out.handle, out)


async def test_packages_csv_rows_columns_and_the_row_query(services: Services) -> None:
    scope, out = await _offloaded(services, "packages.csv")
    text = corpus_text("packages.csv")
    assert out.shape["rows"] == text.count("\n") - 1
    types = dict(out.shape["columns"])
    assert types["files"] == "integer" and types["typed"] == "boolean" and types["name"] == "text"
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(text)))
    selected, per_value = (c["query"] for c in out.shape["calls"] if c["tool"] == "query_large_output")
    # the first column with a value worth selecting: "typed", or "installer" where the environment was installed by
    # more than one installer (uv, and pip for uv itself), as .ci/run's is
    wanted = re.fullmatch(r"SELECT \* FROM t WHERE (typed|installer) = '(\w+)' LIMIT 10", selected)
    assert wanted is not None, selected  # a bare column name: lower case and not a keyword
    column, value = wanted.groups()
    got = list(csv.DictReader(io.StringIO((await outputs.query(services, scope, out.handle, selected)).result)))
    expected = [r for r in rows if r[column] == value][:10]
    assert [r["name"] for r in got] == [r["name"] for r in expected] and got
    assert per_value == f"SELECT {column}, count(*) AS n FROM t GROUP BY 1 ORDER BY n DESC"
    counts = list(csv.reader(io.StringIO((await outputs.query(services, scope, out.handle, per_value)).result)))[1:]
    assert {value: int(n) for value, n in counts} == {
        v: sum(1 for r in rows if r[column] == v) for v in {r[column] for r in rows}
    }
    assert "search_large_output" not in out.preview  # SQL names the rows; no 50-token field-skipping pattern


async def test_python_outline_matches_the_ast(services: Services) -> None:
    _, out = await _offloaded(services, "python: typing.py")
    source = corpus_text("python: typing.py")
    expected: list[tuple[str, int, int | None]] = []

    def top_level(body: list[ast.stmt]) -> None:  # module level, also inside `if` / `try` (as the outline is)
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                expected.append((node.name, start, node.end_lineno))
            elif isinstance(node, ast.If | ast.Try):
                top_level(node.body)
                top_level(node.orelse)
                for handler in getattr(node, "handlers", []):
                    top_level(handler.body)
                top_level(getattr(node, "finalbody", []))

    top_level(ast.parse(source).body)
    expected.sort(key=lambda e: e[1])
    shown = [(what.split(" ", 1)[1], a, b) for a, b, what, depth in out.shape["definitions"] if depth == 0]
    assert shown, out.preview
    assert shown == expected[: len(shown)]
    assert len(source) == len(typing.__loader__.get_source("typing") or "")  # type: ignore[union-attr]


async def test_markdown_and_html_headings(services: Services) -> None:
    _, md = await _offloaded(services, "openai api.md")
    lines = corpus_text("openai api.md").split("\n")
    expected = [(i + 1, line) for i, line in enumerate(lines) if re.match(r"#{1,6} ", line)]
    shown = [(line, "#" * level + " " + text) for line, _, level, text in md.shape["headings"]]
    assert shown == expected[: len(shown)]
    _, page = await _offloaded(services, "html: markdown-it page")
    assert [text for _, _, text in page.shape["headings"]] == [
        re.sub(r"`", "", line.lstrip("#").strip()) for _, line in expected[: len(page.shape["headings"])]
    ]
    html_lines = corpus_text("html: markdown-it page").split("\n")
    for line, level, _ in page.shape["headings"]:
        assert html_lines[line - 1].startswith(f"<h{level}")
    _, pydoc_page = await _offloaded(services, "html: pydoc page")
    assert "<" not in pydoc_page.preview.split("text: ", 1)[1].split("\n")[0]  # text, never tags
