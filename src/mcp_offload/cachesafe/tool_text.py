"""The retrieval tools the gateway injects, per API, as fixed bytes.

They are the MCP server's own retrieval tools (`read_large_output`, `search_large_output`, `query_large_output`,
`list_outputs`; not `offload`: the gateway stores, the model only reads), with the same names, descriptions and
argument schemas (`tool_defs.py`), so a model meets one tool set whichever front end stored the output.

Cache safety: once a session has the tools, every later request carries exactly these bytes after the client's own
tools. The definitions are built once per process and frozen; `tests/gateway/golden/tools_*.json` pins them, so a
change of wording or schema shows up as a diff (and costs every running session one cache miss on upgrade).
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

from mcp_offload.apis.names import ApiName
from mcp_offload.apis.registry import api_named
from mcp_offload.cachesafe.tool_defs import api_tool_definitions

RETRIEVAL_TOOL_NAMES: frozenset[str] = frozenset(
    {"read_large_output", "search_large_output", "query_large_output", "list_outputs"}
)


@functools.cache
def _frozen(api: ApiName) -> str:
    chosen = api_tool_definitions(api_named(api), RETRIEVAL_TOOL_NAMES)
    return json.dumps(chosen, ensure_ascii=False, separators=(",", ":"))


def retrieval_tools(api: ApiName) -> list[dict[str, Any]]:
    """The retrieval tool definitions in `api`'s request format (a fresh copy of fixed data: callers may mutate it)."""
    return copy.deepcopy(_tools(api))


@functools.cache
def _tools(api: ApiName) -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = json.loads(_frozen(api))
    return loaded


def is_retrieval_tool(name: str | None) -> bool:
    """A call of one of our retrieval tools: the gateway's own, or the MCP server's seen through a client's MCP
    namespacing (`mcp__offload__read_large_output` in Claude Code, `offload.read_large_output` elsewhere)."""
    if not name:
        return False
    if name in RETRIEVAL_TOOL_NAMES:
        return True
    return any(name.endswith(sep + tool) for tool in RETRIEVAL_TOOL_NAMES for sep in ("__", ".", "/", ":"))
