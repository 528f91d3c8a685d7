"""The tool list is a public contract: names, descriptions, input and output schemas, annotations.

`tests/data/tools_list.json` was taken from the server before the restructuring (issue 8); any change to it must
be deliberate (regenerate the file and say why in the commit).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from mcp import Client
from referencing import Registry

from mcp_offload.server.offload_server import OffloadServer
from mcp_offload.server.tools import TOOLS_BY_NAME
from support import ERAS, text_of

SNAPSHOT = Path(__file__).parents[1] / "data" / "tools_list.json"


@pytest.mark.parametrize("mode", ERAS)
async def test_tools_list_matches_the_published_contract(server: OffloadServer, mode: str) -> None:
    async with Client(server, mode=mode) as client:
        listed = await client.list_tools()
    got = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]
    assert got == json.loads(SNAPSHOT.read_text())


# -- output schemas: declared inlined (no $ref) and with type lists, meaning exactly pydantic's schema ----------------


def _mutants(value: Any) -> Iterator[Any]:
    """`value` with one thing wrong (or merely different) at each place: a leaf of another type or null, a key
    removed or added, an array element replaced."""
    yield None
    yield "x"
    yield 1.5
    yield []
    if isinstance(value, dict):
        yield {**value, "unexpected": 1}
        for key, inner in value.items():
            yield {k: v for k, v in value.items() if k != key}
            for changed in _mutants(inner):
                yield {**value, key: changed}
    elif isinstance(value, list) and value:
        for changed in _mutants(value[0]):
            yield [changed, *value[1:]]


async def _results_of_every_tool(client: Client) -> dict[str, list[dict[str, Any]]]:
    text = "\n".join(f"line {n} needle {n}" for n in range(1, 9))
    jsonl = "\n".join(json.dumps({"id": n, "name": f"needle-{n}"}) for n in range(4))
    doc = json.dumps({"items": [{"id": 1, "name": "needle", "owner": {"login": "x"}}]})
    handles = []
    results: dict[str, list[dict[str, Any]]] = {}
    calls: list[tuple[str, dict[str, Any]]] = [("offload", {"content": c}) for c in (text, jsonl, doc)]
    for name, args in calls:
        out = (await client.call_tool(name, args)).structured_content
        assert out is not None
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
        assert result.structured_content is not None
        results.setdefault(name, []).append(result.structured_content)
    return results


async def test_output_schemas_mean_what_the_models_say(server: OffloadServer) -> None:
    """The listed output schemas have no $ref (a validating client checks every result: each reference costs it a
    lookup per match), yet accept and refuse exactly what pydantic's own ($defs) schemas do, on real results and on
    every one-change mutant of them."""
    async with Client(server) as client:
        listed = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        results = await _results_of_every_tool(client)
    assert set(results) == set(listed) == set(TOOLS_BY_NAME)
    checked = 0
    for name, instances in results.items():
        schema = listed[name]
        assert schema is not None and "$ref" not in json.dumps(schema) and "$defs" not in schema
        declared = Draft202012Validator(schema, registry=Registry())
        original = Draft202012Validator(TOOLS_BY_NAME[name].output.model_json_schema(), registry=Registry())
        for instance in instances:
            assert declared.is_valid(instance), name
            for mutant in _mutants(instance):
                assert declared.is_valid(mutant) == original.is_valid(mutant), (name, mutant)
                checked += 1
    assert checked > 500
