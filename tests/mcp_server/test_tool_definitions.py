"""The tool definitions a model reads on every turn: within budget, and every example in them true.

The budget counts what a client sends the model for each tool, `{name, description, input_schema}` as compact
JSON (Claude Code's JSON.stringify of the MCP tool), with the project's tokenizer (o200k_base). The examples are
parsed out of the descriptions and run against a server holding outputs made for them, so an example that stops
being true (or a description that loses its example) fails here.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

import pytest
from mcp import Client

from mcp_offload.mcp_server.offload_server import OffloadServer
from mcp_offload.mcp_server.tools import TOOLS, TOOLS_BY_NAME, result_of, tool_of
from mcp_offload.tokens import load_counter
from support import text_of

RETRIEVAL_DEFINITIONS = ("read_large_output", "search_large_output", "query_large_output", "list_outputs")
BUDGET_TOKENS = 600  # issue 19 (with ranked search and SQL: ~597)
# What tells each tool apart from the others: a model picks a tool by these words, so a shorter text keeps them.
DISTINGUISHING = {
    "offload": ("Store", "large", "handle", "preview"),
    "read_large_output": ("exact slice", "lines", "chars", "1-based inclusive", "5,000 tokens"),
    "search_large_output": ("regex", "RE2", "literal", "all of this session's", "line numbers", "jq paths", "ranked"),
    "query_large_output": ("jq", "JSON", "JSON Lines", "-c", "-r", "SQL", "CSV/TSV", "table t"),
    "list_outputs": ("session's stored outputs", "newest first"),
}
_EXAMPLE = re.compile(r"^Example: (\w+)\((.*)\) → (.+)$", re.MULTILINE)


def model_visible(name: str) -> str:
    tool = tool_of(TOOLS_BY_NAME[name])
    shown = {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}
    return json.dumps(shown, separators=(",", ":"), ensure_ascii=False)


def definition_tokens() -> dict[str, int]:
    counter = load_counter()
    return {spec.name: counter.count(model_visible(spec.name)) for spec in TOOLS}


def test_retrieval_tool_definitions_fit_the_budget() -> None:
    tokens = definition_tokens()
    retrieval = sum(tokens[name] for name in RETRIEVAL_DEFINITIONS)
    assert retrieval <= BUDGET_TOKENS, tokens
    assert sum(tokens.values()) <= BUDGET_TOKENS + 150, tokens  # offload too: the proxy lists all five


@pytest.mark.parametrize("name", sorted(DISTINGUISHING))
def test_descriptions_keep_the_words_that_tell_the_tools_apart(name: str) -> None:
    description = TOOLS_BY_NAME[name].description
    for words in DISTINGUISHING[name]:
        assert words in description, (name, words)
    assert _EXAMPLE.search(description), f"{name}: the description lost its example"


def _examples(name: str) -> list[tuple[dict[str, Any], str]]:
    """(arguments, what it is said to return) of each example call in `name`'s description."""
    found = []
    for tool, args, said in _EXAMPLE.findall(TOOLS_BY_NAME[name].description):
        assert tool == name
        call = ast.parse(f"f({args.replace('=true', '=True')})", mode="eval").body
        assert isinstance(call, ast.Call) and not call.args
        found.append(({kw.arg: ast.literal_eval(kw.value) for kw in call.keywords if kw.arg}, said))
    return found


def _orders_doc() -> str:
    items = [{"number": n, "state": "open" if n % 3 else "closed", "title": f"Issue {n}"} for n in range(30)]
    orders = [{"id": f"ord-{1177 + n}", "total": n * 10} for n in range(60)]  # .orders[57].id == "ord-1234"
    return json.dumps({"items": items, "orders": orders}, indent=2)


def _log() -> str:
    lines = [f"2026-11-24T10:00:{n % 60:02d} INFO request {n} ok" for n in range(1, 6001)]
    lines[2999] = "2026-11-24T10:50:00 ERROR payments service timed out after 30s waiting for the bank"
    lines[4811] = "2026-11-24T11:20:12 ERROR upstream connection refused (payments)"
    return "\n".join(lines) + "\n"


def _table() -> str:
    return "id,status\n" + "".join(f"{n},{'ok' if n % 4 else 'failed'}\n" for n in range(40))


async def test_every_example_in_the_descriptions_does_what_it_says(server: OffloadServer) -> None:
    doc, log = _orders_doc(), _log()
    async with Client(server) as client:
        checked = 0
        for name in [spec.name for spec in TOOLS]:
            for args, said in _examples(name):
                if name == "offload":
                    args = {**args, "content": doc}
                handle = args.get("handle")
                if handle == "out_…":
                    args["handle"] = result_of(
                        await client.call_tool("offload", {"content": _source_of(args, doc, log)})
                    )["handle"]
                result = await client.call_tool(name, args)
                assert not result.is_error, text_of(result)
                _check(name, args, said, text_of(result), doc, log)
                checked += 1
    assert checked == sum(len(_examples(spec.name)) for spec in TOOLS) >= len(TOOLS)


def _source_of(args: dict[str, Any], doc: str, log: str) -> str:
    if str(args.get("query", "")).startswith("SELECT"):
        return _table()
    return log if args.get("pattern") == "timeout|refused" or "start_line" in args else doc


def _check(name: str, args: dict[str, Any], said: str, text: str, doc: str, log: str) -> None:
    if name == "offload":
        assert said.startswith("out_… (json)") and "jq" in said
        assert re.match(rf'Stored as out_\w+ "{args["name"]}" \(json;', text) and ".orders" in text
    elif name == "read_large_output":
        wanted = log.splitlines(keepends=True)[args["start_line"] - 1 : args["end_line"]]
        assert said == f"those {len(wanted)} lines verbatim."
        assert text.split("\n", 1)[1] == "".join(wanted)
    elif name == "search_large_output" and args.get("ranked"):  # across the session's outputs, the log among them
        best = text.split("\n#2 ", 1)[0]
        assert said == "the best passages." and "payments service timed out" in best, text
    elif name == "search_large_output" and not args.get("literal"):
        shown = said.strip("'").replace("…", "").split()
        hit = next(line for line in text.splitlines() if line.startswith(shown[0]))
        assert all(word in hit for word in shown[1:]), text
    elif name == "search_large_output":
        path = re.search(r"at (\.\S+)\.$", said)
        assert path and text.startswith(f"{path.group(1)} [lines ") and '"total": 570' in text  # where, the order
    elif name == "query_large_output" and args["query"].startswith("SELECT"):
        counts = dict(line.split(",") for line in text.splitlines()[1:3])
        assert said == "CSV." and text.startswith("status,") and counts == {"failed": "10", "ok": "30"}, text
    elif name == "query_large_output":
        titles = [i["title"] for i in json.loads(doc)["items"] if i["state"] == "open"]
        assert said == "one title per line." and text.splitlines() == titles
    else:
        row = said.strip("'").split(" … ")[0].split(", ")[0].removeprefix("out_… ")
        assert re.search(rf"^out_\w+ {re.escape(row)}, [\d,]+ bytes, ", text, re.MULTILINE), (row, text)
