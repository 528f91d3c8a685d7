"""Every reference's footer names only the query languages that work on that output (a CSV's footer said
`query_large_output (jq, JSON only)` right under its SQL ready calls): each language a footer names is run through
a real MCP client and answers, and a text output names no query_large_output at all."""

from __future__ import annotations

import json
import re

import pytest
from mcp import Client

from mcp_offload.mcp_server.offload_server import OffloadServer
from mcp_offload.mcp_server.tools import result_of
from support import ERAS, text_of

RECORDS = [{"id": i, "name": f"item {i}", "status": ["open", "done"][i % 2]} for i in range(400)]
OUTPUTS: dict[str, tuple[str, str | None]] = {  # name -> (content, the languages the footer names)
    "log": ("".join(f"2024-05-01 12:00:{i % 60:02d} worker {i} did a thing\n" for i in range(900)), None),
    "csv": ("id,name,status\n" + "".join(f"{i},item {i},{['open', 'done'][i % 2]}\n" for i in range(3000)),
            "SQL over table t"),
    "json records": (json.dumps(RECORDS), "jq, or SQL over table t: a row per element"),
    "json object": (json.dumps({"items": RECORDS, "total": 400}), "jq"),
    "json numbers": (json.dumps(list(range(5000))), "jq"),
    "jsonl objects": ("".join(json.dumps(r) + "\n" for r in RECORDS), "jq per record, or SQL over table t"),
    "jsonl arrays": ("".join(json.dumps([r["id"], r["name"]]) + "\n" for r in RECORDS), "jq per record"),
    "diff": ("".join(f"diff --git a/f{i}.py b/f{i}.py\n--- a/f{i}.py\n+++ b/f{i}.py\n@@ -1,2 +1,2 @@\n-a{i}\n+b{i}\n"
                     + " ctx\n" * 80 for i in range(20)), None),
}  # fmt: skip
_FOOTER = re.compile(r"Retrieve with read_large_output \(char or line ranges\), search_large_output \(regex\)"
                     r"(?:, query_large_output \((?P<languages>[^)]*)\))?\.\Z")  # fmt: skip


@pytest.mark.parametrize("mode", ERAS)
async def test_a_footer_names_exactly_the_query_languages_that_answer(server: OffloadServer, mode: str) -> None:
    async with Client(server, mode=mode) as client:
        for name, (content, languages) in OUTPUTS.items():
            stored = await client.call_tool("offload", {"content": content, "name": name})
            reference = text_of(stored)
            footer = _FOOTER.search(reference.split("\n")[-1])
            assert footer is not None, (name, reference.split("\n")[-1])
            assert footer.group("languages") == languages, name
            handle = str(result_of(stored)["handle"])

            async def answers(query: str, handle: str = handle) -> bool:
                result = await client.call_tool("query_large_output", {"handle": handle, "query": query})
                return not result.is_error

            named = languages or ""
            assert await answers("length") is named.startswith("jq"), name
            if "SQL" in named:
                assert await answers("SELECT count(*) AS n FROM t"), name
