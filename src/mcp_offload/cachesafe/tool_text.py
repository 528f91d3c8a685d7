"""The retrieval tools the gateway injects, per API, as fixed bytes.

They are the MCP server's own retrieval tools (`read_large_output`, `search_large_output`, `query_large_output`,
`list_outputs`; not `offload`: the gateway stores, the model only reads), with the same names, descriptions and
argument schemas (`tool_defs.py`), so a model meets one tool set whichever front end stored the output.

Cache safety: once a session has the tools, every later request carries exactly these bytes after the client's own
tools. The definitions are built once per process and frozen; `tests/gateway/golden/tools_*.json` pins them, so a
change of wording or schema shows up as a diff (and costs every running session one cache miss on upgrade).
"""

from __future__ import annotations

import json
from typing import Any

from mcp_offload.apis.base import LlmApi
from mcp_offload.cachesafe.tool_defs import api_tool_definitions

RETRIEVAL_TOOL_NAMES: frozenset[str] = frozenset(
    {"read_large_output", "search_large_output", "query_large_output", "list_outputs"}
)


_FROZEN: dict[str, str] = {}  # by API name: the definitions as JSON text, built once per process


def retrieval_tools(api: LlmApi) -> list[dict[str, Any]]:
    """The retrieval tool definitions in `api`'s request format (a fresh copy of fixed data: callers may mutate it)."""
    frozen = _FROZEN.get(api.name)
    if frozen is None:
        chosen = api_tool_definitions(api, RETRIEVAL_TOOL_NAMES)
        frozen = _FROZEN.setdefault(api.name, json.dumps(chosen, ensure_ascii=False, separators=(",", ":")))
    loaded: list[dict[str, Any]] = json.loads(frozen)
    return loaded


def is_retrieval_tool(name: str | None) -> bool:
    """A call of one of our retrieval tools: the gateway's own, or the MCP server's seen through a client's MCP
    namespacing (`mcp__offload__read_large_output` in Claude Code, `offload.read_large_output` elsewhere)."""
    if not name:
        return False
    if name in RETRIEVAL_TOOL_NAMES:
        return True
    return any(name.endswith(sep + tool) for tool in RETRIEVAL_TOOL_NAMES for sep in ("__", ".", "/", ":"))
