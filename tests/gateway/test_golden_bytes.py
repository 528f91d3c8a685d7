"""Golden files: the exact rewritten bytes of a fixed conversation (golden/<api>.json) and the exact retrieval tool
definitions (golden/tools_<api>.json). Any change to the replacement text, the handle derivation, the preview or
the tool text shows up here as a diff, and costs every running session one cache miss on upgrade: change them only
on purpose. Regenerate with `MCP_OFFLOAD_REGEN_GOLDEN=1 pytest tests/gateway/test_golden_bytes.py`."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from mcp_offload.apis.names import ApiName
from mcp_offload.apis.registry import api_named
from mcp_offload.cachesafe.policy import RewritePolicy
from mcp_offload.cachesafe.request_rewrite import rewrite_request
from mcp_offload.cachesafe.tool_text import retrieval_tools
from support.gateway_core import APIS, Conversation, headers_for, open_services, validate_body, wire

GOLDEN = Path(__file__).parent / "golden"
REGEN = os.environ.get("MCP_OFFLOAD_REGEN_GOLDEN") == "1"
POLICY = RewritePolicy(threshold_tokens=200)


def check(path: Path, value: Any) -> None:
    if REGEN:
        path.write_text(json.dumps(value, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    assert path.exists(), f"{path.name} is missing: regenerate with MCP_OFFLOAD_REGEN_GOLDEN=1"
    expected = json.loads(path.read_text(encoding="utf-8"))
    assert wire(value) == wire(expected), f"{path.name} changed (diff the file after regenerating)"


@pytest.mark.parametrize("api", APIS)
def test_retrieval_tool_text_is_golden(api: ApiName) -> None:
    tools = retrieval_tools(api_named(api))
    check(GOLDEN / f"tools_{api}.json", tools)
    validate_body(api, {**_minimal(api), "tools": tools})


def _minimal(api: ApiName) -> dict[str, Any]:
    if api == "anthropic":
        return {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}]}
    if api == "openai_chat":
        return {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    if api == "gemini":
        return {"contents": [{"role": "user", "parts": [{"text": "x"}]}]}
    return {"model": "m", "input": "x"}


@pytest.mark.parametrize("api", APIS)
async def test_a_fixed_conversation_rewrites_to_golden_bytes(tmp_path: Path, api: ApiName) -> None:
    async with open_services(tmp_path / "store") as services:
        conv = Conversation(api, seed=2024, large_every=2, large_tokens=260)
        body: dict[str, Any] = {}
        for _ in range(4):
            conv.advance()
            body = (
                await rewrite_request(services, api_named(api), conv.body(), headers_for(api, "golden-key"), POLICY)
            ).body
    check(GOLDEN / f"{api}.json", body)


def test_the_retrieval_tool_names_and_how_they_are_recognised() -> None:
    from mcp_offload.cachesafe.tool_text import RETRIEVAL_TOOL_NAMES, is_retrieval_tool

    assert {"read_large_output", "search_large_output", "query_large_output", "list_outputs"} == RETRIEVAL_TOOL_NAMES
    for api in APIS:
        tools = retrieval_tools(api_named(api))
        if api == "gemini":  # one Tool object declaring the four functions
            names = {d["name"] for d in tools[0]["functionDeclarations"]}
        else:
            names = {t["function"]["name"] if "function" in t else t["name"] for t in tools}
        assert names == RETRIEVAL_TOOL_NAMES
    for name in ("read_large_output", "mcp__offload__search_large_output", "offload.list_outputs"):
        assert is_retrieval_tool(name), name
    for other in (None, "", "offload", "bash", "read_large_output_v2", "my_read_large_outputs"):
        assert not is_retrieval_tool(other), other
