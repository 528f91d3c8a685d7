"""The tool list is a public contract: names, descriptions, input schemas, annotations (no output schemas).

`tests/data/tools_list.json` was taken from the server before the restructuring (issue 8); any change to it must
be deliberate (regenerate the file and say why in the commit).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_offload.mcp_server.offload_server import OffloadServer
from mcp_offload.mcp_server.tools import TOOLS_BY_NAME, result_of
from support import ERAS, text_of

SNAPSHOT = Path(__file__).parents[1] / "data" / "tools_list.json"


@pytest.mark.parametrize("mode", ERAS)
async def test_tools_list_matches_the_published_contract(server: OffloadServer, mode: str) -> None:
    async with Client(server, mode=mode) as client:
        listed = await client.list_tools()
    got = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]
    assert got == json.loads(SNAPSHOT.read_text())


# -- results: text for the model, the whole result model in _meta for programs ------------------------------------


async def _results_of_every_tool(client: Client) -> dict[str, list[dict[str, Any]]]:
    text = "\n".join(f"line {n} needle {n}" for n in range(1, 9))
    jsonl = "\n".join(json.dumps({"id": n, "name": f"needle-{n}"}) for n in range(4))
    doc = json.dumps({"items": [{"id": 1, "name": "needle", "owner": {"login": "x"}}]})
    handles = []
    results: dict[str, list[dict[str, Any]]] = {}
    calls: list[tuple[str, dict[str, Any]]] = [("offload", {"content": c}) for c in (text, jsonl, doc)]
    for name, args in calls:
        first = await client.call_tool(name, args)
        out = result_of(first)
        assert first.structured_content is None and out
        handles.append(out["handle"])
        results.setdefault(name, []).append(out)
    text_h, jsonl_h, doc_h = handles
    calls = [
        ("read_large_output", {"handle": text_h, "start_line": 2, "end_line": 3}),
        ("search_large_output", {"pattern": "needle", "handle": text_h, "context_lines": 1}),
        ("search_large_output", {"pattern": "needle", "handle": jsonl_h, "scope": "record"}),
        ("search_large_output", {"pattern": "needle", "handle": doc_h, "scope": "record"}),
        ("query_large_output", {"handle": doc_h, "query": ".items | length"}),
        ("list_outputs", {}),
    ]
    for name, args in calls:
        result = await client.call_tool(name, args)
        assert not result.is_error, text_of(result)
        assert result.structured_content is None and result_of(result)
        results.setdefault(name, []).append(result_of(result))
    return results


async def test_results_are_text_for_the_model_and_models_in_meta(server: OffloadServer) -> None:
    """No tool declares an outputSchema or sends structuredContent (a client such as Claude Code would show the model
    that JSON instead of the text, and it costs more: see tools.py); `_meta` holds the whole result, which is exactly
    the tool's result model."""
    async with Client(server) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        results = await _results_of_every_tool(client)
    assert set(results) == set(listed) == set(TOOLS_BY_NAME)
    assert all(tool.output_schema is None for tool in listed.values())
    for name, instances in results.items():
        model = TOOLS_BY_NAME[name].output
        for instance in instances:
            assert model.model_validate(instance).model_dump(mode="json") == instance, name
